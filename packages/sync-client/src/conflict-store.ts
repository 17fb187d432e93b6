import type { Operation } from '@flagsync/protocol'
import type { ConflictReport } from './conflicts.js'
import { loadLazyOps } from './lazy.js'
import type { OutboxDexie } from './outbox-schema.js'
import type { ConflictResolution } from './types.js'

// The conflicts table of the outbox: operations the receiver answered with a 409, held until the app resolves them,
// and with them every later queued operation of the same record (the cut skips records with a conflict row). What
// changes it lives in conflict-ops.ts, part of the lazy chunk (lazy-ops.ts).

/** The record keys with a conflict: their queued operations are held. */
export async function heldKeys(db: OutboxDexie): Promise<Set<string>> {
  return new Set((await db.conflicts.orderBy('key').uniqueKeys()) as string[])
}

/** See conflict-ops.ts's `storeConflicts` (loaded first, before its transaction opens). */
export async function storeConflicts(
  db: OutboxDexie,
  batchId: string,
  reports: readonly ConflictReport[],
  now: number,
): Promise<number> {
  return (await loadLazyOps()).storeConflicts(db, batchId, reports, now)
}

/** See conflict-ops.ts's `resolveConflict` (loaded first, before its transaction opens). */
export async function resolveConflict(
  db: OutboxDexie,
  id: number,
  resolution: ConflictResolution,
  now: number,
): Promise<Operation | null> {
  return (await loadLazyOps()).resolveConflict(db, id, resolution, now)
}
