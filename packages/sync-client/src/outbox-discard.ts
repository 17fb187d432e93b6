import type { LazyKit } from './lazy-kit.js'
import { dissolve, dissolveBlocker } from './outbox-repair.js'
import type { OutboxDexie, StoredOp } from './outbox-schema.js'
import type { Clock } from './types.js'

// `discard()`: the app takes queued operations out of the outbox, after a rejection. App-driven and rare, so it is
// part of the lazy chunk (see lazy-ops.ts).

const BUSY_POLL_MS = 100

/**
 * What `discardLoop` uses of its client (sync-client.ts): the pipeline and the outbox written out by shape, since both
 * modules load this chunk (naming their types here would make an import circle).
 */
export interface DiscardContext {
  pipeline: { currentAttempt: Promise<unknown> | null }
  store: { db: OutboxDexie }
  clock: Clock
  guard<T>(run: () => Promise<T>): Promise<T>
  changed(): void
  schedule(delayMs: number): void
  assertOpen(): void
}

/** The discard operations, bound to the kit and `recomputeTombstones` (outbox-repair.ts). */
export function discardOps(
  { decodeBatch, SyncClientError }: LazyKit,
  recomputeTombstones: (db: OutboxDexie, removed: readonly StoredOp[]) => Promise<void>,
) {
  return { discard, discardLoop }

  /**
   * Removes queued operations by local id. Ids inside a batch are only removable while that batch and every batch
   * cut after it are safe to change: never sent, or rejected by the receiver (so not applied). Those batches are
   * then dropped and their other operations go back to the queue, to be cut again under new batchIds. Resolves
   * 'busy' while an attempt may be on the wire or about to start.
   */
  function discard(db: OutboxDexie, ids: readonly number[], now: number): Promise<number | 'busy'> {
    const wanted = new Set(ids)
    return db.transaction('rw', db.ops, db.batches, db.tombstones, async () => {
      const removed: StoredOp[] = []
      const batches = (await db.batches.toArray()).map(decodeBatch)
      const index = batches.findIndex((b) => b.sources.some((s) => wanted.has(s.id)))
      if (index >= 0) {
        const affected = batches.slice(index)
        const blocker = dissolveBlocker(affected, now)
        if (blocker === 'busy') return 'busy'
        if (blocker) {
          throw new SyncClientError(
            'invalid_operation',
            `cannot discard: batch ${blocker.batchId} was sent and may have been applied; only operations of a rejected (blocked) or unsent batch can be discarded`,
          )
        }
        for (const batch of affected) for (const s of batch.sources) if (wanted.has(s.id)) removed.push(s)
        await dissolve(db, affected, (s) => !wanted.has(s.id))
      }
      for (const row of await db.ops.bulkGet([...wanted])) if (row) removed.push(row as StoredOp)
      await db.ops.bulkDelete([...wanted])
      await recomputeTombstones(db, removed)
      return removed.length
    })
  }

  /** The client's `discard(ids)`: waits while the batch holding them is on the wire (here or in another tab). */
  async function discardLoop(ids: unknown, c: DiscardContext): Promise<number> {
    if (!Array.isArray(ids) || !ids.every(Number.isInteger)) {
      throw new SyncClientError('invalid_operation', 'discard expects an array of outbox ids (integers from outbox())')
    }
    for (;;) {
      // An attempt of this instance may be on the wire: let it finish first.
      await c.pipeline.currentAttempt?.catch(() => undefined)
      const result = await c.guard(() => discard(c.store.db, ids, c.clock.now()))
      if (result !== 'busy') {
        c.changed()
        if (result > 0) c.schedule(0)
        return result
      }
      // Another instance is sending the batch; its answer decides whether the ids still exist.
      await new Promise<void>((resolve) => c.clock.setTimeout(resolve, BUSY_POLL_MS))
      c.assertOpen()
    }
  }
}
