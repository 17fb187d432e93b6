import type { Operation } from '@flagsync/protocol'
import { mustBe, SyncClientError } from './errors.js'

// Same limits as the protocol's collectionNameSchema / recordIdSchema, checked
// here without zod so the browser bundle stays small.
const MAX_COLLECTION_LENGTH = 128
const MAX_RECORD_ID_LENGTH = 256

const INVALID = 'invalid_operation'

export function invalidOperation(message: string): SyncClientError {
  return new SyncClientError(INVALID, message)
}

export const isId = (value: unknown, max: number): value is string =>
  typeof value === 'string' && value.length > 0 && value.length <= max

export function checkCollection(collection: unknown): string {
  // The outbox keys records as collection + U+0000 + recordId.
  if (!isId(collection, MAX_COLLECTION_LENGTH) || collection.includes('\u0000')) {
    throw mustBe(INVALID, 'collection', `a string of 1 to ${MAX_COLLECTION_LENGTH} characters without U+0000`)
  }
  return collection
}

export function checkRecordId(recordId: unknown): string {
  if (!isId(recordId, MAX_RECORD_ID_LENGTH)) {
    throw mustBe(INVALID, 'recordId', `a string of 1 to ${MAX_RECORD_ID_LENGTH} characters`)
  }
  return recordId
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
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
  let copy: unknown
  try {
    copy = isPlainObject(value) && JSON.parse(JSON.stringify(value))
  } catch (error) {
    throw new SyncClientError(INVALID, `${what} must be JSON-serializable`, { cause: error })
  }
  // Not a plain object, or one whose toJSON makes it something else.
  if (!isPlainObject(copy)) throw mustBe(INVALID, what, 'a plain object (serializing to a JSON object)')
  return copy
}

/** `{baseRevision}` when one is given (a non-negative integer, as the receiver requires), else `{}`. */
export function baseOf(baseRevision: unknown): { baseRevision?: number } {
  if (baseRevision === undefined) return {}
  // `Number.isSafeInteger` is false for anything but a number.
  if (!Number.isSafeInteger(baseRevision) || (baseRevision as number) < 0) {
    throw mustBe(INVALID, 'baseRevision', 'a non-negative integer')
  }
  return { baseRevision: baseRevision as number }
}

/** Checks an operation coming from the app and builds a clean copy with exactly the wire fields. */
export function normalizeOperation(input: unknown): Operation {
  if (!isPlainObject(input)) throw mustBe(INVALID, 'an operation', 'an object')
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
      throw mustBe(INVALID, 'action', 'insert, update or delete', JSON.stringify(input.action))
  }
}
