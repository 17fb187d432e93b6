import type { Operation } from '@flagsync/protocol'
import { type ConflictReport, rebase, resolutionOperation } from './conflicts.js'
import { SyncClientError } from './errors.js'
import {
  type ConflictRow,
  decodeBatch,
  dissolve,
  dissolveBlocker,
  type OutboxDexie,
  recomputeTombstones,
  recordKey,
  type StoredOp,
} from './outbox-schema.js'
import type { ConflictResolution } from './types.js'

// The conflicts table of the outbox: operations the receiver answered with a 409, held until the app resolves them,
// and with them every later queued operation of the same record (the cut skips records with a conflict row).

/**
 * Moves the conflicting operations of a batch answered with a 409 into
 * `conflicts`, drops the batch, and puts its other operations (and those of
 * batches cut after it) back into the queue, to be cut again under a new
 * batchId: the receiver applied nothing of it. Resolves how many conflicts
 * were stored; 0 when that is not safe (a later batch may have been
 * applied): the batch then stays, blocked, as a rejection.
 */
export function storeConflicts(
  db: OutboxDexie,
  batchId: string,
  reports: readonly ConflictReport[],
  now: number,
): Promise<number> {
  return db.transaction('rw', [db.ops, db.batches, db.tombstones, db.conflicts], async () => {
    const batches = (await db.batches.toArray()).map(decodeBatch)
    const index = batches.findIndex((b) => b.batchId === batchId)
    const row = batches[index]
    if (!row || dissolveBlocker(batches.slice(index + 1), now) !== null) return 0
    const moved = new Set<number>()
    const rows: ConflictRow[] = []
    for (const report of reports) {
      const mine = row.operations[report.operationIndex] as Operation
      const ids = row.sourceIds[report.operationIndex] ?? []
      for (const id of ids) moved.add(id)
      const { operationIndex: _index, ...rest } = report
      rows.push({
        ...rest,
        key: recordKey(mine),
        mine,
        sources: row.sources.filter((s) => ids.includes(s.id)),
        batchId,
        detectedAt: now,
      })
    }
    await db.conflicts.bulkAdd(rows)
    await dissolve(db, batches.slice(index), (s) => !moved.has(s.id))
    await recomputeTombstones(
      db,
      row.sources.filter((s) => moved.has(s.id)),
    )
    return rows.length
  })
}

/** The record keys with a conflict: their queued operations are held. */
export async function heldKeys(db: OutboxDexie): Promise<Set<string>> {
  return new Set((await db.conflicts.orderBy('key').uniqueKeys()) as string[])
}

/**
 * Resolves a conflict in one transaction: the conflict row goes, the
 * resolution's operation (if any) is queued, and the operations held behind
 * the conflict are queued again after it (new ids, so they keep their order
 * behind it and a running drain sees them as new), rebased on the current
 * revision (or dropped when the record stays deleted). Resolves the
 * resolution's operation.
 */
export function resolveConflict(
  db: OutboxDexie,
  id: number,
  resolution: ConflictResolution,
  now: number,
): Promise<Operation | null> {
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
