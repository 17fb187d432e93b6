import type { DeliveryLock } from './delivery-lock.js'
import type { OutboxDexie } from './outbox-schema.js'
import type { Clock } from './types.js'

// The delivery lock where there are no Web Locks (Node, old browsers): part of the lazy chunk (see lazy-ops.ts), as
// every current browser has Web Locks. It imports nothing at run time.

const LEASE_NAME = 'delivery'

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
  db: OutboxDexie,
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
        if (await acquireLease(db, owner, now, leaseMs)) {
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
        if (!(await acquireLease(db, owner, now, ms + leaseMs))) return false
        heldUntil = now + ms + leaseMs
        return true
      }
      try {
        return { acquired: true, value: await fn(keepAlive) }
      } finally {
        await releaseLease(db, owner).catch(() => undefined)
      }
    },
    release: () => releaseLease(db, owner).catch(() => undefined),
  }
}

/** Takes or renews the delivery lease; false while another live instance holds it. */
function acquireLease(db: OutboxDexie, owner: string, now: number, durationMs: number): Promise<boolean> {
  return db.transaction('rw', db.lease, async () => {
    const lease = await db.lease.get(LEASE_NAME)
    if (lease && lease.owner !== owner && lease.expiresAt > now) return false
    await db.lease.put({ name: LEASE_NAME, owner, expiresAt: now + durationMs })
    return true
  })
}

function releaseLease(db: OutboxDexie, owner: string): Promise<void> {
  return db.transaction('rw', db.lease, async () => {
    const lease = await db.lease.get(LEASE_NAME)
    if (lease?.owner === owner) await db.lease.delete(LEASE_NAME)
  })
}
