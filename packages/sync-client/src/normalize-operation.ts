import type { Operation } from '@flagsync/protocol'
import { SyncClientError } from './errors.js'

// Same limits as the protocol's collectionNameSchema / recordIdSchema, checked
// here without zod so the browser bundle stays small.
const MAX_COLLECTION_LENGTH = 128
const MAX_RECORD_ID_LENGTH = 256

export function invalidOperation(message: string, cause?: unknown): SyncClientError {
  return new SyncClientError('invalid_operation', message, { cause })
}

export function checkCollection(collection: unknown): string {
  if (typeof collection !== 'string' || collection.length === 0 || collection.length > MAX_COLLECTION_LENGTH) {
    throw invalidOperation(`collection must be a string of 1 to ${MAX_COLLECTION_LENGTH} characters`)
  }
  // The outbox keys records as collection + U+0000 + recordId.
  if (collection.includes('\u0000')) throw invalidOperation('collection must not contain U+0000')
  return collection
}

export function checkRecordId(recordId: unknown): string {
  if (typeof recordId !== 'string' || recordId.length === 0 || recordId.length > MAX_RECORD_ID_LENGTH) {
    throw invalidOperation(`recordId must be a string of 1 to ${MAX_RECORD_ID_LENGTH} characters`)
  }
  return recordId
}

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false
  const proto = Object.getPrototypeOf(value)
  return proto === Object.prototype || proto === null
}

/**
 * A JSON copy of a record or changes object: what is stored is exactly what
 * will be sent (no undefined, Dates as strings), and later mutations by the
 * app cannot reach the queue.
 */
export function toJsonObject(value: unknown, what: 'record' | 'changes'): Record<string, unknown> {
  if (!isPlainObject(value)) throw invalidOperation(`${what} must be a plain object`)
  let copy: unknown
  try {
    copy = JSON.parse(JSON.stringify(value))
  } catch (error) {
    throw invalidOperation(`${what} must be JSON-serializable`, error)
  }
  if (!isPlainObject(copy)) throw invalidOperation(`${what} must serialize to a JSON object`)
  return copy
}

/** `{baseRevision}` when one is given (a non-negative integer, as the receiver requires), else `{}`. */
export function baseOf(baseRevision: unknown): { baseRevision?: number } {
  if (baseRevision === undefined) return {}
  if (typeof baseRevision !== 'number' || !Number.isSafeInteger(baseRevision) || baseRevision < 0) {
    throw invalidOperation('baseRevision must be a non-negative integer')
  }
  return { baseRevision }
}

/** Checks an operation coming from the app and builds a clean copy with exactly the wire fields. */
export function normalizeOperation(input: unknown): Operation {
  if (!isPlainObject(input)) throw invalidOperation('an operation must be an object')
  const collection = checkCollection(input.collection)
  const recordId = checkRecordId(input.recordId)
  const base = baseOf(input.baseRevision)
  switch (input.action) {
    case 'insert':
      return { action: 'insert', collection, recordId, record: toJsonObject(input.record, 'record'), ...base }
    case 'update':
      return { action: 'update', collection, recordId, changes: toJsonObject(input.changes, 'changes'), ...base }
    case 'delete':
      return { action: 'delete', collection, recordId, ...base }
    default:
      throw invalidOperation(`unknown action ${JSON.stringify(input.action)}: expected insert, update or delete`)
  }
}
