import type { OutboxDb } from './outbox-db.js'
import type { Clock, LockManagerLike } from './types.js'

export type LockResult<T> = { acquired: true; value: T } | { acquired: false }

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

const LEASE_POLL_MS = 250

/**
 * Without Web Locks: a lease row in IndexedDB, taken in a transaction, renewed
 * before an attempt unless it still outlasts the attempt by half a lease
 * (so at most every `leaseMs / 2` while draining a backlog), and deleted at
 * the end of each drain and on close, so another instance can take over at
 * once. A crashed holder's lease expires after `leaseMs` (plus the request
 * timeout when it died mid-request).
 */
export function leaseDeliveryLock(
  db: OutboxDb,
  owner: string,
  leaseMs: number,
  clock: Clock,
  signal: AbortSignal,
): DeliveryLock {
  const sleep = (ms: number): Promise<void> =>
    new Promise((resolve) => {
      const handle = clock.setTimeout(done, ms)
      function done(): void {
        signal.removeEventListener('abort', abort)
        resolve()
      }
      function abort(): void {
        clock.clearTimeout(handle)
        done()
      }
      signal.addEventListener('abort', abort)
    })

  return {
    async run(fn, wait) {
      let heldUntil = 0
      for (;;) {
        const now = clock.now()
        if (await db.acquireLease(owner, now, leaseMs)) {
          heldUntil = now + leaseMs
          break
        }
        if (!wait || signal.aborted) return { acquired: false }
        await sleep(LEASE_POLL_MS)
        if (signal.aborted) return { acquired: false }
      }
      const keepAlive = async (ms: number): Promise<boolean> => {
        // Still held for longer than the attempt can last, with half a lease to spare: no need to write it again.
        // Nobody else can take a lease before it expires, so the copy in memory is the truth.
        const now = clock.now()
        if (heldUntil - now >= ms + leaseMs / 2) return true
        if (!(await db.acquireLease(owner, now, ms + leaseMs))) return false
        heldUntil = now + ms + leaseMs
        return true
      }
      try {
        return { acquired: true, value: await fn(keepAlive) }
      } finally {
        await db.releaseLease(owner).catch(() => undefined)
      }
    },
    release: () => db.releaseLease(owner).catch(() => undefined),
  }
}
