import type { Operation } from '@flagsync/protocol'
import { createClientEvents } from './client-events.js'
import { type DeliveryLock, deferredDeliveryLock, webLocksDeliveryLock } from './delivery-lock.js'
import { createDeliveryPipeline } from './delivery-pipeline.js'
import { createDrainLoop } from './drain-loop.js'
import { closedError, toSyncClientError } from './errors.js'
import { loadLazyOps } from './lazy.js'
import {
  baseOf,
  checkCollection,
  checkRecordId,
  invalidOperation,
  normalizeOperation,
  toJsonObject,
} from './normalize-operation.js'
import { OutboxDb } from './outbox-db.js'
import { type ResolvedOptions, resolveOptions } from './resolve-options.js'
import { createStatusFeed, type StatusFeed } from './status-feed.js'
import type { InsertOptions, SyncClient, SyncClientOptions } from './types.js'

/**
 * Creates a sync client. Throws `SyncClientError('invalid_config')` at once
 * for a missing or relative `webhookUrl`, bad numbers, or no IndexedDB.
 *
 * @example
 * const client = createSyncClient({ webhookUrl: 'https://api.example.com/sync' })
 * client.start()
 * await client.update('flags', 'dark-mode', { is_enabled: true })
 */
export function createSyncClient(options: SyncClientOptions): SyncClient {
  // The client is closures rather than a class: private state and helpers are local names, which minifiers shorten,
  // where private class members keep their full names in the bundle (the sync client's size budget).
  const o = resolveOptions(options)
  const { clock } = o
  const store = new OutboxDb(o.dbName, o)
  const shutdown = new AbortController()
  const channelName = `flagsync-sync-client:${o.dbName}`
  const lock = deliveryLock(o, store, `${channelName}:delivery`, shutdown.signal)
  let closed = false
  let closing: Promise<void> | null = null
  const isClosed = () => closed

  const feed = createStatusFeed({
    read: () => store.snapshot(),
    isOnline: () => o.online.isOnline(),
    isAttempting: () => pipeline.attempting,
    isClosed,
    clock,
  })
  const events = createClientEvents(feed, o.broadcastChannel?.(channelName) ?? null, clock, isClosed, assertOpen)
  const { changed } = events
  const pipeline = createDeliveryPipeline(store, o, shutdown.signal, events)
  const { pushSoon, schedule, halt, ...control } = createDrainLoop(
    o,
    store,
    feed,
    lock,
    pipeline,
    isClosed,
    assertOpen,
    guard,
    changed,
  )

  function assertOpen(): void {
    if (closed) throw closedError()
  }

  /** A read or an app-driven change of the outbox: refused once closed, storage errors as SyncClientError. */
  async function guard<T>(run: () => Promise<T>): Promise<T> {
    assertOpen()
    try {
      return await run()
    } catch (error) {
      throw toSyncClientError(error)
    }
  }

  async function commit(op: Operation): Promise<number> {
    let id: number
    try {
      id = await store.enqueue(op, clock.now())
    } catch (error) {
      throw toSyncClientError(error, 'could not queue the operation')
    }
    changed()
    pushSoon()
    return id
  }

  return {
    ...writeMethods(assertOpen, commit, o.generateId),
    ...readMethods(guard, store, feed),
    async resolve(conflictId, resolution) {
      await guard(async () => (await loadLazyOps()).resolveConflict(store.db, conflictId, resolution, clock.now()))
      changed()
      pushSoon()
    },
    async discard(ids) {
      assertOpen()
      return (await loadLazyOps()).discardLoop(ids, { pipeline, store, clock, guard, changed, schedule, assertOpen })
    },
    ...control,
    onDelivered: events.onDelivered,
    close() {
      if (closing) return closing
      const idle = halt()
      closed = true
      shutdown.abort()
      closing = (async () => {
        await idle
        await lock.release()
        await feed.refreshing
        feed.listeners.clear()
        events.close()
        store.close()
      })()
      return closing
    },
  }
}

/** Web Locks where the platform has them; else a lease in IndexedDB (its code is in the lazy chunk). */
function deliveryLock(o: ResolvedOptions, store: OutboxDb, name: string, signal: AbortSignal): DeliveryLock {
  if (o.locks) return webLocksDeliveryLock(o.locks, name, signal)
  // The lease's owner id is drawn now, before any record id: ids come from `generateId` in a fixed order.
  const owner = o.generateId()
  return deferredDeliveryLock(async () =>
    (await loadLazyOps()).leaseDeliveryLock(store.db, owner, o.leaseMs, o.clock, signal),
  )
}

/** insert, update, delete and enqueue: checked, copied, then queued by `commit`. */
function writeMethods(
  assertOpen: () => void,
  commit: (op: Operation) => Promise<number>,
  generateId: () => string,
): Pick<SyncClient, 'insert' | 'update' | 'delete' | 'enqueue'> {
  return {
    async insert(collection, record, options = {}) {
      assertOpen()
      checkCollection(collection)
      const json = toJsonObject(record, 'record')
      const recordId = recordIdFor(collection, record, options, generateId)
      await commit({ action: 'insert', collection, recordId, record: json, ...baseOf(options.baseRevision) })
      return recordId
    },
    async update(collection, recordId, changes, options = {}) {
      assertOpen()
      await commit(normalizeOperation({ action: 'update', collection, recordId, changes, ...options }))
    },
    async delete(collection, recordId, options = {}) {
      assertOpen()
      await commit(normalizeOperation({ action: 'delete', collection, recordId, ...options }))
    },
    async enqueue(operation) {
      assertOpen()
      return commit(normalizeOperation(operation))
    },
  }
}

/** The reads of the outbox, and clearing dead letters (no status change: they are not in the queue). */
function readMethods(
  guard: <T>(run: () => Promise<T>) => Promise<T>,
  store: OutboxDb,
  feed: StatusFeed,
): Pick<SyncClient, 'pending' | 'status' | 'outbox' | 'conflicts' | 'deadLetters' | 'clearDeadLetters'> {
  return {
    pending: async () => (await guard(() => store.snapshot())).pending,
    status: async () => feed.compute(await guard(() => store.snapshot())),
    outbox: () => guard(() => store.outbox()),
    conflicts: () => guard(() => store.conflicts()),
    deadLetters: () => guard(async () => (await loadLazyOps()).deadLetters(store.db)),
    async clearDeadLetters(ids) {
      await guard(async () => (await loadLazyOps()).clearDeadLetters(store.db, ids))
    },
  }
}

/** The record id of an inserted record: its own id (a flag's key), `options.recordId`, or a generated one. */
function recordIdFor(
  collection: string,
  record: Record<string, unknown>,
  options: InsertOptions,
  generateId: () => string,
): string {
  // A flag's id is its key (the receiver refuses a flag whose key is not its recordId): `insert('flags', flag)`
  // must not file it under a generated id.
  const field = record.id == null && collection === 'flags' ? 'key' : 'id'
  const own = record[field]
  const hasOwn = own !== undefined && own !== null
  if (hasOwn && typeof own !== 'string' && typeof own !== 'number') {
    throw invalidOperation(`record.${field} must be a string or a number`)
  }
  if (options.recordId !== undefined) {
    const recordId = checkRecordId(options.recordId)
    if (hasOwn && String(own) !== recordId) {
      throw invalidOperation(
        `record.${field} (${JSON.stringify(own)}) differs from options.recordId (${JSON.stringify(recordId)})`,
      )
    }
    return recordId
  }
  return hasOwn ? checkRecordId(String(own)) : generateId()
}
