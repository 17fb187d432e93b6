import type { ConflictKit } from './conflict-ops.js'
import { SyncClientError } from './errors.js'
import { toJsonObject } from './normalize-operation.js'
import { type ConflictRow, recomputeTombstones, recordKey, setAside } from './outbox-schema.js'
import type { Conflict } from './types.js'

export type { ConflictReport } from './conflict-ops.js'

export function toConflict(row: ConflictRow): Conflict {
  const { key: _key, sources: _sources, ...conflict } = row
  return conflict as Conflict
}

/**
 * The conflict handling of conflict-ops.ts, loaded on first use: only a 409
 * or a `resolve()` needs it, so bundlers that split dynamic imports keep it
 * out of what a page loads up front (the README's bundle section says how
 * much). Loaded outside any IndexedDB transaction: awaiting it inside one
 * would let the transaction commit.
 */
export async function loadConflictOps(): Promise<ConflictOps> {
  return (await import('./conflict-ops.js')).conflictOps(kit)
}

/** See `ConflictKit` (conflict-ops.ts). */
const kit: ConflictKit = { recomputeTombstones, recordKey, setAside, SyncClientError, toJsonObject }
type ConflictOps = ReturnType<typeof import('./conflict-ops.js').conflictOps>
