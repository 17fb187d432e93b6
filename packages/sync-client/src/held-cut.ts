import type { OutboxDexie, StoredOp } from './outbox-schema.js'

// The cut's delete while records are held behind a conflict (see `cutBatch`): only then, so it is part of the lazy
// chunk (lazy-ops.ts), like everything else about conflicts. A cut that needs it before the chunk is loaded aborts,
// and runs again once it is (`withLazy`, lazy.ts).

/**
 * `deleteTaken` (cut-batch.ts) while records are held: their operations sit among the taken ones, so no range
 * delete. Resolves true, having deleted nothing, when a taken row from the view's memory (`cached` rows) is gone:
 * the cut starts again from a fresh read.
 */
export async function deleteTakenAmongHeld(
  db: OutboxDexie,
  cached: number,
  taken: readonly StoredOp[],
): Promise<boolean> {
  const ids = taken.map((row) => row.id)
  if (cached > 0 && (await db.ops.bulkGet(ids)).some((row) => row === undefined)) return true
  await db.ops.bulkDelete(ids)
  return false
}
