import { conflictOps } from './conflict-ops.js'
import type { SyncClientError } from './errors.js'
import { leaseDeliveryLock } from './lease-lock.js'
import type { toJsonObject } from './normalize-operation.js'
import { repairOps } from './outbox-repair.js'
import type { decodeBatch, recordKey } from './outbox-schema.js'
import { foldOps } from './remote-fold.js'
import type { addRemoteRows, ROW_KEYS, remoteRows } from './remote-records.js'

// The sync client's code for rare paths, one chunk that bundlers load on first use (see `loadLazyOps` in lazy.ts):
// conflicts (a 409, `resolve()`), `discard()`, dead letters, the delivery lease (no Web Locks) and the fold of
// `remoteKeys`. A page that only queues, delivers and backs off never loads it.
//
// It imports nothing from the eager modules at run time: what it uses of them comes in as `kit`. A module imported by
// both the eager code and this chunk is moved by esbuild into a third chunk, a separate request compressed on its own
// (about 0.6 kB gz more up front than the same code in the entry chunk).

/** What the lazy chunk uses from the modules every page loads up front, handed in by `loadLazyOps`. */
export interface LazyKit {
  addRemoteRows: typeof addRemoteRows
  decodeBatch: typeof decodeBatch
  recordKey: typeof recordKey
  remoteRows: typeof remoteRows
  ROW_KEYS: typeof ROW_KEYS
  SyncClientError: typeof SyncClientError
  toJsonObject: typeof toJsonObject
}

/** Every lazy operation, bound to the kit. */
export function lazyOps(kit: LazyKit) {
  const repair = repairOps(kit)
  return { ...repair, ...conflictOps({ ...kit, ...repair }), ...foldOps(kit), leaseDeliveryLock }
}

export type LazyOps = ReturnType<typeof lazyOps>
