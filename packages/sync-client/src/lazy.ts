import { SyncClientError } from './errors.js'
import type { LazyKit, LazyOps } from './lazy-ops.js'
import { toJsonObject } from './normalize-operation.js'
import { decodeBatch, recordKey } from './outbox-schema.js'
import { addRemoteRows, ROW_KEYS, remoteRows } from './remote-records.js'

/** See `LazyKit` (lazy-ops.ts). */
const kit: LazyKit = { addRemoteRows, decodeBatch, recordKey, remoteRows, ROW_KEYS, SyncClientError, toJsonObject }

let loaded: LazyOps | undefined

/**
 * The code of the rare paths (lazy-ops.ts), loaded on first use: bundlers that split dynamic imports keep it out of
 * what a page loads up front (the README's bundle section says how much). Call it outside any IndexedDB transaction:
 * awaiting it inside one would let the transaction commit. When the chunk cannot be loaded (an offline page that did
 * not cache it), rejects with `SyncClientError('storage_failed')` and the next call tries again.
 */
export async function loadLazyOps(): Promise<LazyOps> {
  if (loaded) return loaded
  let lazy: typeof import('./lazy-ops.js')
  try {
    lazy = await import('./lazy-ops.js')
  } catch (error) {
    throw new SyncClientError('storage_failed', 'could not load the sync client code for this call (offline?)', {
      cause: error,
    })
  }
  loaded ??= lazy.lazyOps(kit)
  return loaded
}

/** The lazy operations if they are loaded already (for work inside a transaction, which cannot wait for a load). */
export const lazyOpsLoaded = (): LazyOps | undefined => loaded
