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

/**
 * What conflict-ops.ts uses from modules every page loads up front, handed to it rather than imported: a module
 * imported by both the eager code and the lazy chunk is moved by esbuild into a third chunk, a separate request
 * compressed on its own (about 0.6 kB gz more up front than the same code in the entry chunk).
 */
const kit = { recomputeTombstones, recordKey, setAside, SyncClientError, toJsonObject }
export type ConflictKit = typeof kit
type ConflictOps = ReturnType<typeof import('./conflict-ops.js').conflictOps>
