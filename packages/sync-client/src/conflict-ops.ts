import type { Operation } from '@flagsync/protocol'
import type { LazyKit } from './lazy-kit.js'
import type { repairOps } from './outbox-repair.js'
import type { ConflictRow, OutboxDexie, StoredOp } from './outbox-schema.js'
import type { ConflictKind, ConflictResolution } from './types.js'

// Conflict handling proper: reading a 409's conflicts, holding them, resolving them. It runs only after a 409 or a
// `resolve()`, so it is part of the lazy chunk that bundlers load then (see lazy-ops.ts); what every cut needs
// (`heldKeys`) stays in conflict-store.ts. What it uses from the eager modules comes in as `kit` (see `LazyKit`).

/** What conflict handling uses: the eager modules' kit and the repair operations (outbox-repair.ts). */
export type ConflictKit = LazyKit & ReturnType<typeof repairOps>

/** One conflict of a 409 body, as the receiver reports it. */
export type ConflictReport = Pick<
  ConflictRow,
  'collection' | 'recordId' | 'kind' | 'fields' | 'base' | 'current' | 'currentRevision' | 'reason'
> & { operationIndex: number }

const KINDS = new Set(['field', 'deleted', 'exists'])
const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v)
const recordOrNull = (v: unknown) => (isObject(v) ? v : null)

/** The conflict operations, bound to what they use from the eager modules. */
export function conflictOps(kit: ConflictKit) {
  const { recordKey, setAside } = kit
  return { parseConflicts, storeConflicts, resolveConflict: conflictResolver(kit) }

  /**
   * Moves the conflicting operations of a batch answered with a 409 into
   * `conflicts`, drops the batch, and puts its other operations (and those of
   * batches cut after it) back into the queue, to be cut again under a new
   * batchId: the receiver applied nothing of it. Resolves how many conflicts
   * were stored; 0 when that is not safe (a later batch may have been
   * applied): the batch then stays, blocked, as a rejection.
   */
  function storeConflicts(
    db: OutboxDexie,
    batchId: string,
    reports: readonly ConflictReport[],
    now: number,
  ): Promise<number> {
    return setAside(
      db,
      db.conflicts,
      batchId,
      now,
      () => reports.map((r) => r.operationIndex),
      (k, mine, sources): ConflictRow => {
        const { operationIndex: _index, ...rest } = reports[k] as ConflictReport
        return { ...rest, key: recordKey(mine), mine, sources, batchId, detectedAt: now }
      },
    )
  }
}

/**
 * The conflicts of a 409 body (`{code: 'conflict', conflicts: [...]}`), each
 * naming an operation of the batch; null when the body is not one (then the
 * 409 is an ordinary rejection).
 */
function parseConflicts(body: unknown, operations: readonly Operation[]): ConflictReport[] | null {
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

/** The read-only revision a record read from the server carries is not part of what is written back. */
function withoutRevision(record: Record<string, unknown>): Record<string, unknown> {
  const { revision: _readOnly, ...rest } = record
  return rest
}

/**
 * A held edit of a resolved record goes out on top of what the resolution
 * saw: its base moves up to the current revision (or goes, if the record was
 * deleted: there is no revision to build on).
 */
function rebase(op: Operation, currentRevision: number | null): Operation {
  if (op.baseRevision === undefined) return op
  const { baseRevision, ...rest } = op
  if (currentRevision === null) return rest
  return { ...rest, baseRevision: Math.max(baseRevision, currentRevision) }
}

/** `resolutionOperation`, bound to the kit's error class and JSON check. */
function resolutionOperationOf({ SyncClientError, toJsonObject }: LazyKit) {
  const invalidResolution = (message: string) => new SyncClientError('invalid_resolution', message)

  /**
   * The operation a resolution sends (null: nothing to send). Throws
   * `SyncClientError('invalid_resolution')` for a resolution that does not
   * fit the conflict (`'recreate'` of a record that still exists, `'mine'` of
   * an edit of a deleted record).
   */
  return function resolutionOperation(conflict: ConflictRow, resolution: ConflictResolution): Operation | null {
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
    // On top of the current record even when mine was an insert (an `exists` conflict): an insert would replace it,
    // and every field of theirs the merged record leaves out would go back to its default.
    if (current === null) return { action: 'insert', collection, recordId, record, ...onTop }
    return { action: 'update', collection, recordId, changes: record, ...onTop }
  }
}

/** `resolveConflict`, bound to the kit and the repair operations. */
function conflictResolver(kit: ConflictKit) {
  const { recomputeTombstones, recordKey, SyncClientError } = kit
  const resolutionOperation = resolutionOperationOf(kit)

  /**
   * Resolves a conflict in one transaction: the conflict row goes, the
   * resolution's operation (if any) is queued, and the operations held behind
   * the conflict are queued again after it (new ids, so they keep their order
   * behind it and a running drain sees them as new), rebased on the current
   * revision (or dropped when the record stays deleted). Resolves the
   * resolution's operation.
   */
  return function resolveConflict(
    db: OutboxDexie,
    id: number,
    resolution: ConflictResolution,
    now: number,
  ): Promise<Operation | null> {
    if (!Number.isInteger(id)) {
      throw new SyncClientError('invalid_operation', 'resolve expects a conflict id (an integer from conflicts())')
    }
    return db.transaction('rw', [db.ops, db.batches, db.tombstones, db.conflicts], async () => {
      const row = await db.conflicts.get(id)
      if (!row) throw new SyncClientError('unknown_conflict', `no conflict ${id} (resolved already?)`)
      const op = resolutionOperation(row, resolution)
      const held = ((await db.ops.toArray()) as StoredOp[]).filter((s) => recordKey(s.op) === row.key)
      await db.conflicts.delete(id)
      await db.ops.bulkDelete(held.map((s) => s.id))
      // The record is gone and stays gone: held updates and deletes of it could only be refused; from an insert on
      // they recreate it.
      const firstInsert = held.findIndex((s) => s.op.action === 'insert')
      const kept = row.current === null && op === null ? (firstInsert < 0 ? [] : held.slice(firstInsert)) : held
      const requeued = kept.map((s) => ({ op: rebase(s.op, row.currentRevision), queuedAt: s.queuedAt }))
      const fresh = op ? [{ op, queuedAt: now }, ...requeued] : requeued
      const ids = (await db.ops.bulkAdd(fresh, { allKeys: true })) as number[]
      await recomputeTombstones(db, [...row.sources, ...fresh.map((s, i) => ({ ...s, id: ids[i] as number }))])
      return op
    })
  }
}
