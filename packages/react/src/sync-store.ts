import type { Conflict, OutboxEntry, SyncClientLike, SyncStatus } from './sync-types.js'

const NO_ENTRIES: readonly OutboxEntry[] = Object.freeze([])
const NO_CONFLICTS: readonly Conflict[] = Object.freeze([])

/**
 * A synchronous face on a sync client, whose status and outbox are read from
 * IndexedDB (async): the last values read, re-read on each of its
 * notifications, replaced only when they differ, so equal re-reads render
 * nothing. One per sync client, shared by every hook; it listens while
 * someone does.
 */
export class SyncStore {
  private status: SyncStatus | null = null
  private entries: readonly OutboxEntry[] = NO_ENTRIES
  private conflicts: readonly Conflict[] = NO_CONFLICTS
  private readonly listeners = new Set<() => void>()
  private unsubscribe: (() => void) | undefined
  private reading: Promise<void> = Promise.resolve()

  constructor(private readonly sync: SyncClientLike) {}

  readonly subscribe = (listener: () => void): (() => void) => {
    this.listeners.add(listener)
    if (!this.unsubscribe) {
      try {
        // The sync client sends its current status soon after subscribing, and again on every outbox change.
        this.unsubscribe = this.sync.subscribe((status) => this.received(status))
      } catch {
        // A closed sync client: keep the last values.
      }
    }
    return () => {
      this.listeners.delete(listener)
      if (this.listeners.size === 0) {
        this.unsubscribe?.()
        this.unsubscribe = undefined
      }
    }
  }

  readonly getStatus = (): SyncStatus | null => this.status
  readonly getEntries = (): readonly OutboxEntry[] => this.entries
  readonly getConflicts = (): readonly Conflict[] => this.conflicts

  private received(status: SyncStatus): void {
    if (!this.status || !sameStatus(this.status, status)) {
      this.status = status
      this.notify()
    }
    // Reads run one after another, so an older outbox never replaces a newer one.
    this.reading = this.reading.then(async () => {
      const [entries, conflicts] = await Promise.all([
        this.sync.outbox().catch(() => undefined),
        this.sync.conflicts().catch(() => undefined),
      ])
      let changed = false
      if (entries && !sameEntries(this.entries, entries)) {
        this.entries = entries.length === 0 ? NO_ENTRIES : entries
        changed = true
      }
      if (conflicts && JSON.stringify(conflicts) !== JSON.stringify(this.conflicts)) {
        this.conflicts = conflicts.length === 0 ? NO_CONFLICTS : conflicts
        changed = true
      }
      if (changed) this.notify()
    })
  }

  private notify(): void {
    for (const listener of [...this.listeners]) listener()
  }
}

const stores = new WeakMap<SyncClientLike, SyncStore>()

export function syncStoreOf(sync: SyncClientLike): SyncStore {
  let store = stores.get(sync)
  if (!store) {
    store = new SyncStore(sync)
    stores.set(sync, store)
  }
  return store
}

function sameStatus(a: SyncStatus, b: SyncStatus): boolean {
  return (
    a.state === b.state &&
    a.pending === b.pending &&
    a.nextAttemptAt === b.nextAttemptAt &&
    a.conflicts === b.conflicts &&
    JSON.stringify(a.lastError) === JSON.stringify(b.lastError)
  )
}

function sameEntries(a: readonly OutboxEntry[], b: readonly OutboxEntry[]): boolean {
  if (a.length !== b.length) return false
  return a.every((entry, i) => {
    const other = b[i]
    return (
      other !== undefined &&
      entry.id === other.id &&
      entry.batchId === other.batchId &&
      JSON.stringify(entry.operation) === JSON.stringify(other.operation)
    )
  })
}
