import type { BatchRow } from './outbox-db.js'
import type { Clock, DeliveryError, StatusListener, SyncState, SyncStatus } from './types.js'

/** What the status is computed from: the outbox's head batch, the number of operations to send, the conflicts. */
interface Snapshot {
  head: BatchRow | undefined
  pending: number
  conflicts: number
}

/** The client state a status needs besides the outbox. */
export interface StatusSource {
  /** Reads the outbox's head and pending count from IndexedDB. */
  read(): Promise<Snapshot>
  isOnline(): boolean
  isAttempting(): boolean
  isClosed(): boolean
  /** The client's clock (injected timers): reads are paced by how long they take. */
  clock: Pick<Clock, 'now' | 'setTimeout'>
}

/** See `createStatusFeed`. */
export interface StatusFeed {
  readonly listeners: Set<StatusListener>
  /** A failure that left no batch behind (dead-lettered); cleared by the next success. */
  detachedError: DeliveryError | null
  /** The read in progress, if any. */
  readonly refreshing: Promise<void> | null
  /** Re-reads the status and notifies subscribers; calls made while a read runs are coalesced into one more. */
  refresh(): void
  /** A state change that needs no new read (an attempt starts): subscribers hear it at once. */
  notifyFromCache(): void
  compute(snapshot: Snapshot): SyncStatus
}

/**
 * The client's status and its subscribers: re-read from IndexedDB on every
 * change (coalesced), announced from the last read when nothing needs a new
 * one (an attempt starts).
 */
export function createStatusFeed(source: StatusSource): StatusFeed {
  let dirty = false
  /** The last snapshot read for subscribers, to announce state changes without waiting for IndexedDB. */
  let last: Snapshot | null = null
  /** When the next read may start (see the loop in `refresh`). */
  let nextReadAt = 0
  const live = () => feed.listeners.size > 0 && !source.isClosed()
  const notify = (snapshot: Snapshot): void => {
    const status = feed.compute(snapshot)
    for (const listener of [...feed.listeners]) callSafely(() => listener(status))
  }
  const feed: StatusFeed & { refreshing: Promise<void> | null } = {
    listeners: new Set(),
    detachedError: null,
    refreshing: null,
    refresh() {
      if (!live()) return
      dirty = true
      feed.refreshing ??= (async () => {
        const { clock } = source
        while (dirty && !source.isClosed()) {
          // A read costs the whole queue, and IndexedDB runs it between the writes: after one that took t ms the next
          // waits t ms, so a subscriber (a status hook on screen) cannot turn n awaited writes into n full reads. The
          // writes keep at least half the time; the first change after a quiet spell is still read at once.
          const wait = nextReadAt - clock.now()
          if (wait >= 1) await new Promise<void>((resolve) => clock.setTimeout(resolve, wait))
          dirty = false
          const started = clock.now()
          try {
            last = await source.read()
          } catch {
            continue // closed underneath us, or a transient read failure; the next change retries
          }
          const ended = clock.now()
          nextReadAt = ended + (ended - started)
          if (source.isClosed()) break
          notify(last)
        }
        feed.refreshing = null
      })()
    },
    notifyFromCache() {
      if (!live()) return
      if (last) notify(last)
      else feed.refresh()
    },
    compute({ head, pending, conflicts }) {
      const backingOff = head !== undefined && head.attempts > 0
      let state: SyncState = 'idle'
      if (!source.isOnline()) state = 'offline'
      else if (head?.lastError?.kind === 'rejected') state = 'blocked'
      else if (source.isAttempting()) state = 'syncing'
      else if (backingOff) state = 'backoff'
      return {
        state,
        pending,
        lastError: head?.lastError ?? feed.detachedError,
        nextAttemptAt: backingOff ? head.nextAttemptAt : null,
        conflicts,
      }
    },
  }
  return feed
}

/** A throwing listener must not stop delivery or other listeners; its error still surfaces. */
export function callSafely(fn: () => void): void {
  try {
    fn()
  } catch (error) {
    queueMicrotask(() => {
      throw error
    })
  }
}
