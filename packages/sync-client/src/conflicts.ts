import type { Operation } from '@flagsync/protocol'
import { SyncClientError } from './errors.js'
import { toJsonObject } from './normalize-operation.js'
import type { ConflictRow } from './outbox-schema.js'
import type { Conflict, ConflictKind, ConflictResolution } from './types.js'

/** One conflict of a 409 body, as the receiver reports it. */
export type ConflictReport = Pick<
  ConflictRow,
  'collection' | 'recordId' | 'kind' | 'fields' | 'base' | 'current' | 'currentRevision' | 'reason'
> & { operationIndex: number }

const KINDS = new Set(['field', 'deleted', 'exists'])
const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v)
const recordOrNull = (v: unknown) => (isObject(v) ? v : null)

/**
 * The conflicts of a 409 body (`{code: 'conflict', conflicts: [...]}`), each
 * naming an operation of the batch; null when the body is not one (then the
 * 409 is an ordinary rejection).
 */
export function parseConflicts(body: unknown, operations: readonly Operation[]): ConflictReport[] | null {
  if (!isObject(body) || body.code !== 'conflict' || !Array.isArray(body.conflicts)) return null
  const reports: ConflictReport[] = []
  for (const c of body.conflicts as unknown[]) {
    if (!isObject(c)) return null
    const index = c.operationIndex
    const op = typeof index === 'number' ? operations[index] : undefined
    if (!op || !Number.isInteger(index) || !KINDS.has(c.kind as string)) return null
    reports.push({
      operationIndex: index as number,
      collection: op.collection,
      recordId: op.recordId,
      kind: c.kind as ConflictKind,
      fields: Array.isArray(c.fields) ? c.fields.filter((f): f is string => typeof f === 'string') : [],
      base: recordOrNull(c.base),
      current: recordOrNull(c.current),
      currentRevision: typeof c.currentRevision === 'number' ? c.currentRevision : null,
      reason: typeof c.reason === 'string' ? c.reason : typeof body.error === 'string' ? body.error : 'conflict',
    })
  }
  return reports.length > 0 ? reports : null
}

export function toConflict(row: ConflictRow): Conflict {
  const { key: _key, sources: _sources, ...conflict } = row
  return conflict as Conflict
}

/** The read-only revision a record read from the server carries is not part of what is written back. */
function withoutRevision(record: Record<string, unknown>): Record<string, unknown> {
  const { revision: _readOnly, ...rest } = record
  return rest
}

function invalidResolution(message: string): SyncClientError {
  return new SyncClientError('invalid_resolution', message)
}

/**
 * The operation a resolution sends (null: nothing to send). Throws
 * `SyncClientError('invalid_resolution')` for a resolution that does not
 * fit the conflict (`'recreate'` of a record that still exists, `'mine'` of
 * an edit of a deleted record).
 */
export function resolutionOperation(conflict: ConflictRow, resolution: ConflictResolution): Operation | null {
  const { collection, recordId, mine, current } = conflict
  const onTop = conflict.currentRevision === null ? {} : { baseRevision: conflict.currentRevision }
  if (resolution === 'theirs') return null
  if (resolution === 'recreate') {
    if (current !== null) throw invalidResolution(`${recordId} still exists: 'recreate' is for a deleted record`)
    if (mine.action === 'delete') return null
    const record = mine.action === 'insert' ? mine.record : { ...(conflict.base ?? {}), ...mine.changes }
    return { action: 'insert', collection, recordId, record: withoutRevision(record) }
  }
  if (resolution === 'mine') {
    if (current === null) {
      if (mine.action === 'delete') return null
      if (mine.action === 'update') {
        throw invalidResolution(`${recordId} was deleted: use 'recreate' or 'theirs'`)
      }
    }
    const { baseRevision: _stale, ...op } = mine
    return { ...op, ...onTop }
  }
  if (!isObject(resolution)) throw invalidResolution("a resolution is 'mine', 'theirs', 'recreate' or { record }")
  // A JSON copy, as for any write: what is stored is what will be sent.
  const record = withoutRevision(toJsonObject(resolution.record, 'record'))
  if (current === null || mine.action === 'insert') return { action: 'insert', collection, recordId, record, ...onTop }
  return { action: 'update', collection, recordId, changes: record, ...onTop }
}

/**
 * A held edit of a resolved record goes out on top of what the resolution
 * saw: its base moves up to the current revision (or goes, if the record was
 * deleted: there is no revision to build on).
 */
export function rebase(op: Operation, currentRevision: number | null): Operation {
  if (op.baseRevision === undefined) return op
  const { baseRevision, ...rest } = op
  if (currentRevision === null) return rest
  return { ...rest, baseRevision: Math.max(baseRevision, currentRevision) }
}
