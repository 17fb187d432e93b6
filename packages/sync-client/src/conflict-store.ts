import type { OutboxDexie } from './outbox-schema.js'

// The conflicts table of the outbox: operations the receiver answered with a 409, held until the app resolves them,
// and with them every later queued operation of the same record (the cut skips records with a conflict row). What
// changes it lives in conflict-ops.ts, part of the lazy chunk (lazy-ops.ts).

/** The record keys with a conflict: their queued operations are held. */
export async function heldKeys(db: OutboxDexie): Promise<Set<string>> {
  return new Set((await db.conflicts.orderBy('key').uniqueKeys()) as string[])
}
