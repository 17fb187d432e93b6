import { conflictOps } from './conflict-ops.js'
import { deleteTakenAmongHeld } from './held-cut.js'
import type { LazyKit } from './lazy-kit.js'
import { leaseDeliveryLock } from './lease-lock.js'
import { asideOps } from './outbox-aside.js'
import { discardOps } from './outbox-discard.js'
import { repairOps } from './outbox-repair.js'
import type { OutboxDexie } from './outbox-schema.js'
import { foldOps } from './remote-fold.js'
import { lookupOps } from './remote-lookup.js'

// The sync client's code for rare paths, one chunk that bundlers load on first use (see `loadLazyOps` in lazy.ts):
// conflicts (a 409, `resolve()`, the cut's delete while records are held), `discard()`, dead letters, the delivery
// lease (no Web Locks), the fold of `remoteKeys`, its Bloom filters and its lookups (insert … delete of one record in
// the queue), and the backoff's reset when the browser comes back online or the app calls `retryNow()`. A page that
// only queues, delivers and backs off never loads it.
//
// It imports nothing from the eager modules at run time: what it uses of them comes in as `kit`. A module imported by
// both the eager code and this chunk is moved by esbuild into a third chunk, a separate request compressed on its own
// (about 0.6 kB gz more up front than the same code in the entry chunk).

/** Every lazy operation, bound to the kit. */
export function lazyOps(kit: LazyKit) {
  const repair = repairOps(kit)
  const conflicts = conflictOps({ ...kit, ...repair })
  return {
    ...repair,
    ...discardOps(kit, repair.recomputeTombstones),
    ...conflicts,
    ...asideOps({ ...repair, ...conflicts }),
    ...foldOps(kit),
    ...lookupOps(kit),
    leaseDeliveryLock,
    deleteTakenAmongHeld,
    /**
     * The server was found reachable (the app's stream to it is live again): batches waiting out a network failure
     * (no response, or a timeout) are due now. Their attempt count stays, so failing again backs off further; a
     * batch the server answered (5xx, 429, Retry-After) keeps its wait. Resolves how many batches were made due.
     */
    cutShortNetworkBackoff: (db: OutboxDexie, now: number) =>
      db.batches
        .filter((row) => row.nextAttemptAt > now && row.lastError?.kind === 'network')
        .modify({ nextAttemptAt: now }),
    /** Back to a fresh schedule (the browser came back online); the error stays until a success. */
    resetBackoff: (db: OutboxDexie) => db.batches.toCollection().modify({ attempts: 0, nextAttemptAt: 0 }),
  }
}

export type { LazyKit }

export type LazyOps = ReturnType<typeof lazyOps>
