import type { Operation } from '@flagsync/protocol'
import type { LocalView, PendingEntry } from './local-view.js'
import type { Clock, FlagClient, FlagOutbox } from './types.js'

/** The flag client's side of its outbox (see {@link outboxView}). */
export interface OutboxView {
  /** Resolves once a read started after this call has been applied. */
  refresh(): Promise<void>
  /** Queues `op` and shows it at once: through `enqueue` (its id places it), else the named call and a read. */
  queue(outbox: FlagOutbox, op: Operation, named: () => Promise<unknown>): Promise<void>
  /** Starts following the outbox: called once the cache has answered, so a cold start shows cached flags first. */
  attach(): void
  /** Stops following it; resolves once a read in progress has been applied. */
  close(): Promise<unknown>
}

/**
 * The outbox seen from the flag client: queued edits show at once; acknowledged ones until the stream echoes them.
 * Reads of the whole outbox are coalesced (a burst of changes costs one more read, not one each) and applied per
 * flag; the client's own edits are applied from the id the outbox gives them, without a read. `changed` applies a
 * change to the view and tells listeners.
 */
export function outboxView(
  sync: FlagOutbox | undefined,
  local: LocalView,
  changed: (mutate: () => string[]) => void,
  clock: Clock,
): OutboxView {
  let reads = 0
  let syntheticId = 0
  let closed = false
  /** Entries this client queued, by id: the number of outbox reads started before each was queued. */
  const queuedAfterRead = new Map<number, number>()
  let refreshing: Promise<void> | null = null
  let stale = false
  const unsubscribers: Array<() => void> = []
  const readOutbox = async (outbox: FlagOutbox) => {
    const started = ++reads
    const [entries, found] = await Promise.all([
      outbox.outbox().catch(() => undefined),
      outbox.conflicts?.().catch(() => undefined) ?? [],
    ])
    if (!entries) return
    // An outbox without ids: every read replaces the whole queue (fresh negative ids, all new).
    const withIds = entries.every((e) => typeof e.id === 'number')
    if (!withIds) syntheticId -= entries.length
    changed(() => [
      ...local.setPending(
        entries.map((e, i) => ({ id: withIds ? (e.id as number) : syntheticId + i, operation: e.operation })),
        (id) => (queuedAfterRead.get(id) ?? 0) >= started,
      ),
      ...(found ? local.setConflicts(found) : []),
    ])
    for (const [id, at] of queuedAfterRead) if (at < started) queuedAfterRead.delete(id)
  }
  const refresh = (): Promise<void> => {
    if (!sync || closed) return Promise.resolve()
    stale = true
    refreshing ??= (async () => {
      while (stale && !closed) {
        stale = false
        await readOutbox(sync)
      }
      refreshing = null
    })()
    return refreshing
  }
  if (sync) {
    unsubscribers.push(
      sync.onDelivered((_batchId, operations, info) => {
        // A replayed batch changed nothing now: the server's state (and its stream) already tells the truth.
        if (!info?.duplicate) changed(() => local.addAcked(operations, clock.now()))
      }),
    )
  }
  return {
    refresh,
    async queue(outbox, op, named) {
      if (!outbox.enqueue || (op.action === 'insert' && 'id' in op.record)) {
        await named()
        await refresh()
        return
      }
      const id = await outbox.enqueue(op)
      queuedAfterRead.set(id, reads)
      const entry: PendingEntry = { id, operation: JSON.parse(JSON.stringify(op)) as Operation }
      changed(() => local.appendPending(entry))
    },
    attach() {
      if (!sync || closed) return
      unsubscribers.push(sync.subscribe(() => void refresh()))
      void refresh()
    },
    close() {
      closed = true
      for (const off of unsubscribers) off()
      return Promise.resolve(refreshing)
    },
  }
}

/**
 * The client's edits, queued in the sync client's outbox (`sync`; without it they throw) and shown at once. Every
 * edit is based on the revision of the flag as the server last sent it. Creating a key this client does not have is
 * based on the newest revision it knows: a flag someone else created under that key since is a conflict (kind
 * `exists`), not silently replaced.
 */
export function flagEdits(
  sync: FlagOutbox | undefined,
  local: LocalView,
  collection: string,
  outbox: OutboxView,
): Pick<FlagClient, 'createFlag' | 'updateFlag' | 'deleteFlag'> {
  const baseOf = (key: string, creating = false): { baseRevision?: number } => {
    const server = local.serverFlags
    let revision = server.get(key)?.revision
    if (revision === undefined && creating) {
      for (const flag of server.values()) {
        if (typeof flag.revision === 'number' && flag.revision > (revision ?? -1)) revision = flag.revision
      }
    }
    return typeof revision === 'number' ? { baseRevision: revision } : {}
  }
  const requireSync = () => {
    if (!sync) throw new Error('flag edits need the syncClient option')
    return sync
  }
  return {
    async createFlag(flag) {
      const target = requireSync()
      const { revision: _readOnly, conflict: _local, ...record } = flag
      const base = baseOf(flag.key, true)
      await outbox.queue(target, { action: 'insert', collection, recordId: flag.key, record, ...base }, () =>
        target.insert(collection, record, { recordId: flag.key, ...base }),
      )
    },
    async updateFlag(key, changes) {
      const target = requireSync()
      const base = baseOf(key)
      await outbox.queue(target, { action: 'update', collection, recordId: key, changes, ...base }, () =>
        target.update(collection, key, changes, base),
      )
    },
    async deleteFlag(key) {
      const target = requireSync()
      const base = baseOf(key)
      await outbox.queue(target, { action: 'delete', collection, recordId: key, ...base }, () =>
        target.delete(collection, key, base),
      )
    },
  }
}
