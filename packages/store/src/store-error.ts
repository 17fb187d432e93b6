/** Codes a store failure can carry; each is also an HTTP error code of the protocol. */
export type StoreErrorCode = 'unavailable' | 'conflict' | 'internal'

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
const PG_TRANSIENT_CLASSES = ['08', '53', '57', '40'] // connection, resources, operator intervention, rollback
const NODE_TRANSIENT = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOSPC'])

/** Turns anything a driver throws into a StoreError, keeping the original as `cause`. */
export function toStoreError(error: unknown): StoreError {
  if (error instanceof StoreError) return error
  const code = typeof error === 'object' && error !== null ? String((error as { code?: unknown }).code ?? '') : ''
  const message = error instanceof Error ? error.message : String(error)
  if (SQLITE_TRANSIENT.has(code) || NODE_TRANSIENT.has(code) || isPgTransient(code) || isPoolTimeout(message)) {
    return new StoreError('unavailable', 'the database is temporarily unavailable; retry later', { cause: error })
  }
  if (code === 'SQLITE_CONSTRAINT' || code === '23505') {
    return new StoreError('conflict', 'the write conflicts with existing data', { cause: error })
  }
  return new StoreError('internal', 'unexpected database error', { cause: error })
}

function isPgTransient(code: string): boolean {
  return code.length === 5 && PG_TRANSIENT_CLASSES.some((cls) => code.startsWith(cls))
}

function isPoolTimeout(message: string): boolean {
  return message.includes('Knex: Timeout acquiring a connection')
}
