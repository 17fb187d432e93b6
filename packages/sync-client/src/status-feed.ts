import type { BatchRow } from './outbox-db.js'
import type { DeliveryError, StatusListener, SyncState, SyncStatus } from './types.js'

/** What the status is computed from: the outbox's head batch, the number of operations to send, the conflicts. */
export interface Snapshot {
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
}

/**
 * The client's status and its subscribers: re-read from IndexedDB on every
 * change (coalesced), announced from the last read when nothing needs a new
 * one (an attempt starts).
 */
export class StatusFeed {
  readonly listeners = new Set<StatusListener>()
  /** A failure that left no batch behind (dead-lettered); cleared by the next success. */
  detachedError: DeliveryError | null = null
  /** The read in progress, if any. */
  refreshing: Promise<void> | null = null
  private dirty = false
  /** The last snapshot read for subscribers, to announce state changes without waiting for IndexedDB. */
  private lastSnapshot: Snapshot | null = null

  constructor(private readonly source: StatusSource) {}

  /** Re-reads the status and notifies subscribers; calls made while a read runs are coalesced into one more. */
  refresh(): void {
    if (this.listeners.size === 0 || this.source.isClosed()) return
    this.dirty = true
    if (this.refreshing) return
    this.refreshing = (async () => {
      while (this.dirty && !this.source.isClosed()) {
        this.dirty = false
        try {
          this.lastSnapshot = await this.source.read()
        } catch {
          continue // closed underneath us, or a transient read failure; the next change retries
        }
        if (this.source.isClosed()) break
        this.notify(this.compute(this.lastSnapshot))
      }
      this.refreshing = null
    })()
  }

  /** A state change that needs no new read (an attempt starts): subscribers hear it at once. */
  notifyFromCache(): void {
    if (this.listeners.size === 0 || this.source.isClosed()) return
    if (this.lastSnapshot) this.notify(this.compute(this.lastSnapshot))
    else this.refresh()
  }

  compute({ head, pending, conflicts }: Snapshot): SyncStatus {
    const backingOff = head !== undefined && head.attempts > 0
    let state: SyncState = 'idle'
    if (!this.source.isOnline()) state = 'offline'
    else if (head?.lastError?.kind === 'rejected') state = 'blocked'
    else if (this.source.isAttempting()) state = 'syncing'
    else if (backingOff) state = 'backoff'
    return {
      state,
      pending,
      lastError: head?.lastError ?? this.detachedError,
      nextAttemptAt: backingOff ? head.nextAttemptAt : null,
      conflicts,
    }
  }

  private notify(status: SyncStatus): void {
    for (const listener of [...this.listeners]) callSafely(() => listener(status))
  }
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
