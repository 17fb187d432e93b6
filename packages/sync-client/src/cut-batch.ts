import type { Operation } from '@flagsync/protocol'
import { compactRecord } from './compact.js'
import { type BatchRow, clearTombstonesOf, type OutboxDexie, recordKey, type StoredOp } from './outbox-schema.js'

/** How many queued operations one cut looks at, at least. */
const MIN_WINDOW = 200

/**
 * Cuts the next batch; call inside a rw transaction over ops, batches,
 * tombstones and remoteRecords that found no persisted batch.
 *
 * Reads the oldest queued operations (a window of max(200, 4 × batchSize)),
 * groups them by record in order of first appearance, compacts each record's
 * run, and takes records until `batchSize` operations are selected: a
 * compacted operation takes all its source operations with it. Records that
 * cancel out are consumed without being sent. The window keeps a cut cheap
 * when the backlog is huge; operations beyond it are later (higher ids) than
 * every operation in it, so a record split by the window edge keeps its order
 * and is merely compacted in two parts.
 */
export async function cutBatch(
  db: OutboxDexie,
  batchSize: number,
  newBatchId: () => string,
  now: number,
): Promise<BatchRow | undefined> {
  const window = Math.max(MIN_WINDOW, batchSize * 4)
  for (;;) {
    const rows = (await db.ops.limit(window).toArray()) as StoredOp[]
    if (rows.length === 0) return undefined
    const runs = new Map<string, StoredOp[]>()
    for (const row of rows) {
      const key = recordKey(row.op)
      const run = runs.get(key)
      if (run) run.push(row)
      else runs.set(key, [row])
    }
    const insertFirst = [...runs].filter(([, run]) => run[0]?.op.action === 'insert').map(([key]) => key)
    const known = await db.remoteRecords.bulkGet(insertFirst)
    const remote = new Set(insertFirst.filter((_, i) => known[i] !== undefined))

    const operations: Operation[] = []
    const sourceIds: number[][] = []
    const sources: StoredOp[] = []
    for (const [key, run] of runs) {
      for (const row of run) sources.push(row)
      const compacted = compactRecord(
        run.map((row) => row.op),
        remote.has(key),
      )
      if (compacted === null) continue
      operations.push(compacted)
      sourceIds.push(run.map((row) => row.id))
      if (operations.length >= batchSize) break
    }
    await db.ops.bulkDelete(sources.map((row) => row.id))
    if (operations.length === 0) {
      // Everything in the window cancelled out: nothing is queued for those records any more.
      await clearTombstonesOf(db, sources)
      if (rows.length < window) return undefined
      continue
    }
    const batch: BatchRow = {
      batchId: newBatchId(),
      operations,
      sourceIds,
      sources,
      attempts: 0,
      nextAttemptAt: 0,
      lastError: null,
      sendingUntil: 0,
      createdAt: now,
    }
    batch.seq = await db.batches.add(batch)
    return batch
  }
}
