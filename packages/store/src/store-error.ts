/**
 * Codes a store failure can carry; each is also an HTTP error code of the protocol. `validation_failed`:
 * the database refused a value of the request itself (a NUL character or an over-long string on
 * PostgreSQL), so retrying the same request cannot help.
 */
export type StoreErrorCode = 'unavailable' | 'conflict' | 'validation_failed' | 'internal'

/**
 * A database failure normalized at the store boundary. `unavailable` means the
 * caller may retry the same request later (locked, disk full, connection lost).
 */
export class StoreError extends Error {
  override readonly name = 'StoreError'
  readonly code: StoreErrorCode
  /** Seconds a client should wait before retrying, for `unavailable`. */
  readonly retryAfterSeconds: number | undefined

  constructor(code: StoreErrorCode, message: string, options: { cause?: unknown; retryAfterSeconds?: number } = {}) {
    super(message, { cause: options.cause })
    this.code = code
    this.retryAfterSeconds = options.retryAfterSeconds ?? (code === 'unavailable' ? 1 : undefined)
  }
}

// SQLite result codes and PostgreSQL SQLSTATE classes that mean "try again later".
const SQLITE_TRANSIENT = new Set(['SQLITE_BUSY', 'SQLITE_LOCKED', 'SQLITE_FULL', 'SQLITE_IOERR', 'SQLITE_CANTOPEN'])
// connection, resources, operator intervention, rollback (serialization/deadlock), 55P03 lock_not_available
const PG_TRANSIENT_CLASSES = ['08', '53', '57', '40', '55P03']
const NODE_TRANSIENT = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOSPC'])

/** Turns anything a driver throws into a StoreError, keeping the original as `cause`. */
export function toStoreError(error: unknown): StoreError {
  if (error instanceof StoreError) return error
  const code = typeof error === 'object' && error !== null ? String((error as { code?: unknown }).code ?? '') : ''
  const message = error instanceof Error ? error.message : String(error)
  if (SQLITE_TRANSIENT.has(code) || NODE_TRANSIENT.has(code) || isPgTransient(code) || isTransientMessage(message)) {
    return new StoreError('unavailable', 'the database is temporarily unavailable; retry later', { cause: error })
  }
  if (code === 'SQLITE_CONSTRAINT' || code === '23505') {
    return new StoreError('conflict', 'the write conflicts with existing data', { cause: error })
  }
  if (isPgDataException(error, code)) {
    return new StoreError(
      'validation_failed',
      'the database cannot store a value of this request (e.g. a NUL character or a string over its column length)',
      { cause: error },
    )
  }
  return new StoreError('internal', 'unexpected database error', { cause: error })
}

/**
 * Whether an error came from the database driver or its pool (as opposed to application code running
 * inside a write transaction, whose errors pass through unchanged).
 */
export function isDatabaseFailure(error: unknown): boolean {
  if (error instanceof StoreError) return true
  if (typeof error !== 'object' || error === null) return false
  const e = error as { code?: unknown; severity?: unknown; name?: unknown; message?: unknown }
  const code = typeof e.code === 'string' ? e.code : ''
  if (code.startsWith('SQLITE_') || NODE_TRANSIENT.has(code)) return true
  if (typeof e.severity === 'string' && code.length === 5) return true // pg DatabaseError
  if (e.name === 'KnexTimeoutError') return true
  return typeof e.message === 'string' && isTransientMessage(e.message)
}

// SQLSTATE class 22 (data exception): 22021 invalid byte (NUL) for the encoding, 22001 string too long, ...
function isPgDataException(error: unknown, code: string): boolean {
  return code.length === 5 && code.startsWith('22') && typeof (error as { severity?: unknown }).severity === 'string'
}

function isPgTransient(code: string): boolean {
  return code.length === 5 && PG_TRANSIENT_CLASSES.some((cls) => code.startsWith(cls))
}

// Failures the drivers report without a code: the pool was exhausted or the connection went away.
const TRANSIENT_MESSAGES = [
  'Knex: Timeout acquiring a connection',
  'Connection terminated',
  'Client has encountered a connection error',
]

function isTransientMessage(message: string): boolean {
  return TRANSIENT_MESSAGES.some((m) => message.includes(m))
}
