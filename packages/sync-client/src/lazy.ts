import { SyncClientError } from './errors.js'
import type { LazyKit, LazyOps } from './lazy-ops.js'
import { toJsonObject } from './normalize-operation.js'
import { decodeBatch, recordKey } from './outbox-schema.js'
import { ROW_KEYS, remoteRows } from './remote-records.js'

/** See `LazyKit` (lazy-ops.ts). */
const kit: LazyKit = {
  decodeBatch,
  recordKey,
  remoteRows,
  ROW_KEYS,
  SyncClientError,
  toJsonObject,
}

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

/**
 * Thrown by `lazyNow` inside a transaction that needs the lazy chunk before it is loaded (a transaction cannot wait
 * for a load): the transaction aborts, having written nothing, and `withLazy` runs it again once the chunk is loaded.
 */
const NEEDS_LAZY = new Error('lazy') // never shown: always caught

/** The lazy operations, for code inside a transaction run by `withLazy`. */
export function lazyNow(): LazyOps {
  if (!loaded) throw NEEDS_LAZY
  return loaded
}

/** Runs `transaction`, and once more after loading the lazy chunk when it needed it (see `lazyNow`). */
export async function withLazy<T>(transaction: () => Promise<T>): Promise<T> {
  try {
    return await transaction()
  } catch (error) {
    if (error !== NEEDS_LAZY) throw error
    await loadLazyOps()
    return transaction()
  }
}
