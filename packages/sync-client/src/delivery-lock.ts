import type { LockManagerLike } from './types.js'

type LockResult<T> = { acquired: true; value: T } | { acquired: false }

/**
 * Makes sure only one instance (tab, worker) delivers from a shared outbox at
 * a time. `run` holds the lock for one drain and releases it afterwards, so
 * instances take turns; the delivery state itself (batch, attempts, backoff)
 * lives in IndexedDB and is shared.
 */
export interface DeliveryLock {
  /** Runs `fn` holding the lock; without `wait`, gives up at once when another instance has it. */
  run<T>(fn: (keepAlive: (ms: number) => Promise<boolean>) => Promise<T>, wait: boolean): Promise<LockResult<T>>
  /** Lets go at once (close). */
  release(): Promise<void>
}

/** Web Locks: the browser releases the lock when the tab goes away, even on a crash. */
export function webLocksDeliveryLock(locks: LockManagerLike, name: string, signal: AbortSignal): DeliveryLock {
  return {
    async run(fn, wait) {
      try {
        const options = wait ? { signal } : { ifAvailable: true }
        return (await locks.request(name, options, async (lock) => {
          if (lock === null) return { acquired: false }
          return { acquired: true, value: await fn(async () => !signal.aborted) }
        })) as LockResult<never>
      } catch (error) {
        // Waiting was aborted by close(); anything else is the callback's own error.
        if (signal.aborted) return { acquired: false }
        throw error
      }
    },
    async release() {},
  }
}

/**
 * A lock made on its first use: the lease lock (no Web Locks) lives in the lazy chunk. When loading it fails (an
 * offline page without the chunk cached), that `run` rejects and the next one tries again; one never made holds
 * nothing to release.
 */
export function deferredDeliveryLock(make: () => Promise<DeliveryLock>): DeliveryLock {
  let made: Promise<DeliveryLock> | null = null
  return {
    run(fn, wait) {
      made ??= make().catch((error: unknown) => {
        made = null
        throw error
      })
      return made.then((lock) => lock.run(fn, wait))
    },
    release: async () => (await made?.catch(() => null))?.release(),
  }
}
