import type { Operation } from '@flagsync/protocol'
import type { Table } from 'dexie'
import type { LazyKit } from './lazy-kit.js'
import type { BatchRow, OutboxDexie, StoredOp } from './outbox-schema.js'
import type { DeliveryError } from './types.js'

// Taking operations out of the middle of the outbox: dead letters, conflicts (conflict-ops.ts), `discard()`
// (outbox-discard.ts). None of it runs on a page that only queues, delivers and backs off, so it is part of the lazy
// chunk (see lazy-ops.ts); what it uses from the eager modules comes in as `kit`.

/** The repair operations, bound to what they use from the eager modules. */
export function repairOps({ decodeBatch, recordKey }: LazyKit) {
  const recomputeTombstones = tombstoneRecompute(decodeBatch, recordKey)
  const setAside = setAsideOf(decodeBatch, recomputeTombstones)
  return { setAside, recomputeTombstones, deadLetter, recut }

  /**
   * Moves rejected operations to the dead-letter store: only the one the
   * receiver named (`operationIndex`) when it did, else the whole batch. The
   * batch is dropped; operations not moved go back to the queue and are cut
   * into a new batch with a new id (the receiver applied nothing of the
   * rejected one), and so do those of batches cut after it, which must not
   * overtake them. Resolves 0 when that is not safe (a later batch may have
   * been applied): the batch then stays, blocked.
   */
  function deadLetter(db: OutboxDexie, batchId: string, error: DeliveryError, now: number): Promise<number> {
    const named = error.operationIndex
    return setAside(
      db,
      db.deadLetters,
      batchId,
      now,
      (row) =>
        named !== undefined && named >= 0 && named < row.operations.length ? [named] : row.operations.map((_, i) => i),
      (_, operation, sources) => ({ batchId, operation, sources, error, deadAt: now }),
    )
  }

  /**
   * Drops the rejected batch `batchId` and puts all its operations back into the queue (with those of the batches
   * cut after it, which must not overtake them), to be cut again under new batchIds: the receiver applied nothing of
   * it. False when that is not safe (a later batch may have been applied): the batch then stays, blocked.
   */
  function recut(db: OutboxDexie, batchId: string, now: number): Promise<boolean> {
    return db.transaction('rw', db.ops, db.batches, async () => {
      const batches = (await db.batches.toArray()).map(decodeBatch)
      const index = batches.findIndex((b) => b.batchId === batchId)
      if (index < 0 || dissolveBlocker(batches.slice(index + 1), now) !== null) return false
      await dissolve(db, batches.slice(index), () => true)
      return true
    })
  }
}

/** Whether the receiver may have applied the batch: then it must go out again unchanged, under its batchId. */
function mayHaveBeenApplied(batch: BatchRow): boolean {
  // A rejection means the receiver applied nothing of it (a batch it had applied would be acknowledged as a
  // duplicate).
  if (batch.lastError?.kind === 'rejected') return false
  // sendingUntil > 0 (even expired): an attempt started and its answer was never recorded (a crash).
  return batch.sent === true || batch.attempts > 0 || batch.sendingUntil > 0
}

/**
 * Why `batches` cannot be dropped and re-cut now: 'busy' while an attempt may
 * be on the wire (or about to start), the first batch that may have been
 * applied, else null.
 */
export function dissolveBlocker(batches: readonly BatchRow[], now: number): 'busy' | BatchRow | null {
  if (batches.some((b) => b.sendingUntil > now)) return 'busy'
  return batches.find(mayHaveBeenApplied) ?? null
}

/** Drops `batches` and puts the sources that `keep` accepts back into the queue, under their original ids. */
export async function dissolve(db: OutboxDexie, batches: readonly BatchRow[], keep: (s: StoredOp) => boolean) {
  if (batches.length === 0) return
  await db.batches.bulkDelete(batches.map((b) => b.seq as number))
  await db.ops.bulkPut(batches.flatMap((b) => b.sources.filter(keep)))
}

/** `recomputeTombstones`, bound to the kit's batch decoding and record keys. */
function tombstoneRecompute(decodeBatch: LazyKit['decodeBatch'], recordKey: LazyKit['recordKey']) {
  /**
   * After operations were removed from the middle of the queue (discard, dead
   * letter): sets each touched record's tombstone from its last remaining
   * queued operation. Reads the whole queue; these are rare, app-driven calls.
   */
  return async function recomputeTombstones(db: OutboxDexie, removed: readonly StoredOp[]): Promise<void> {
    if (removed.length === 0) return
    const touched = new Set(removed.map((s) => recordKey(s.op)))
    const last = new Map<string, StoredOp>()
    const remaining: StoredOp[] = []
    for (const row of await db.batches.toArray()) remaining.push(...decodeBatch(row).sources)
    remaining.push(...((await db.ops.toArray()) as StoredOp[]))
    for (const row of remaining) {
      const key = recordKey(row.op)
      if (touched.has(key)) {
        const previous = last.get(key)
        if (!previous || previous.id < row.id) last.set(key, row)
      }
    }
    for (const key of touched) {
      const row = last.get(key)
      if (row?.op.action === 'delete') await db.tombstones.put({ key, opId: row.id })
      else await db.tombstones.delete(key)
    }
  }
}

/** `setAside`, bound to the kit's batch decoding and `recomputeTombstones`. */
function setAsideOf(
  decodeBatch: LazyKit['decodeBatch'],
  recomputeTombstones: (db: OutboxDexie, removed: readonly StoredOp[]) => Promise<void>,
) {
  /**
   * Moves operations of the batch `batchId` aside (dead letters, conflicts) in one transaction over ops, batches,
   * tombstones and `table`: a row of `table` for each of the batch's operations at `indexes` (`toRow(k, operation,
   * its sources)` for the k-th), then the batch is dropped and its other operations go back to the queue, with those
   * of the batches cut after it, to be cut again under new batchIds (the receiver applied nothing of it). Resolves how
   * many rows were added; 0 when that is not safe (a later batch may have been applied): the batch then stays,
   * blocked.
   */
  return function setAside<T>(
    db: OutboxDexie,
    table: Table<T, number>,
    batchId: string,
    now: number,
    indexes: (batch: BatchRow) => number[],
    toRow: (k: number, operation: Operation, sources: StoredOp[]) => T,
  ): Promise<number> {
    return db.transaction('rw', [db.ops, db.batches, db.tombstones, table], async () => {
      const batches = (await db.batches.toArray()).map(decodeBatch)
      const index = batches.findIndex((b) => b.batchId === batchId)
      const row = batches[index]
      if (!row || dissolveBlocker(batches.slice(index + 1), now) !== null) return 0
      const moved = new Set<number>()
      const rows = indexes(row).map((i, k) => {
        const ids = row.sourceIds[i] ?? []
        for (const id of ids) moved.add(id)
        return toRow(
          k,
          row.operations[i] as Operation,
          row.sources.filter((s) => ids.includes(s.id)),
        )
      })
      await table.bulkAdd(rows)
      await dissolve(db, batches.slice(index), (s) => !moved.has(s.id))
      await recomputeTombstones(
        db,
        row.sources.filter((s) => moved.has(s.id)),
      )
      return rows.length
    })
  }
}
