import type { Operation } from '@flagsync/protocol'
import { type CrossTabMessage, isCrossTabMessage } from './cross-tab.js'
import { deferredDeliveryLock, webLocksDeliveryLock } from './delivery-lock.js'
import { createDeliveryPipeline, type DrainResult } from './delivery-pipeline.js'
import { SyncClientError, toSyncClientError } from './errors.js'
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
import { resolveOptions } from './resolve-options.js'
import { callSafely, createStatusFeed } from './status-feed.js'
import type { DeliveredListener, DeliveryInfo, InsertOptions, SyncClient, SyncClientOptions } from './types.js'

const CROSS_TAB_THROTTLE_MS = 50

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
  // The client is one closure rather than a class: its private state and helpers are local names, which minifiers
  // shorten, where private class members keep their full names in the bundle (the sync client's size budget).
  const o = resolveOptions(options)
  const { clock } = o
  const store = new OutboxDb(o.dbName, o)
  const shutdown = new AbortController()
  const deliveredListeners = new Set<DeliveredListener>()
  const channelName = `flagsync-sync-client:${o.dbName}`
  // The lease's owner id is drawn now, as before the lease moved to the lazy chunk: ids come from `generateId` in
  // the same order.
  const leaseOwner = o.locks ? '' : o.generateId()
  const lock = o.locks
    ? webLocksDeliveryLock(o.locks, `${channelName}:delivery`, shutdown.signal)
    : deferredDeliveryLock(async () =>
        (await loadLazyOps()).leaseDeliveryLock(store.db, leaseOwner, o.leaseMs, clock, shutdown.signal),
      )
  const channel = o.broadcastChannel ? o.broadcastChannel(channelName) : null
  let closed = false
  let closing: Promise<void> | null = null
  let running = false
  let timer: unknown = null
  /** When the scheduled background pass is due (epoch ms), or null. */
  let timerDueAt: number | null = null
  let unsubscribeOnline: (() => void) | null = null
  let chain: Promise<unknown> = Promise.resolve()
  /** While set, further 'changed' messages to other tabs wait for it (see `announceChange`). */
  let crossTabTimer: unknown = null
  let crossTabPending = false

  const feed = createStatusFeed({
    read: () => store.snapshot(),
    isOnline: () => o.online.isOnline(),
    isAttempting: () => pipeline.attempting,
    isClosed: () => closed,
    clock,
  })
  const pipeline = createDeliveryPipeline(store, o, shutdown.signal, {
    attemptStarted: feed.notifyFromCache,
    delivered: (batch, info) => {
      feed.detachedError = null
      emitDelivered(batch.batchId, batch.operations, info)
      post({ type: 'delivered', batchId: batch.batchId, operations: batch.operations, duplicate: info.duplicate })
      changed()
    },
    deadLettered: (error) => {
      feed.detachedError = error
      changed()
    },
    failureRecorded: changed,
    conflicted: changed,
  })
  if (channel) {
    channel.onmessage = ({ data }) => {
      if (closed || !isCrossTabMessage(data)) return
      if (data.type === 'delivered') {
        feed.detachedError = null
        emitDelivered(data.batchId, data.operations, { duplicate: data.duplicate === true })
      }
      feed.refresh()
    }
  }

  function assertOpen(): void {
    if (closed) throw new SyncClientError('closed', 'the sync client is closed')
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

  /** A write while started: deliver shortly instead of at the next interval (backoff still applies). */
  function pushSoon(): void {
    const delay = o.pushDelayMs
    if (delay === null || !running) return
    if (timerDueAt !== null && timerDueAt <= clock.now() + delay) return
    schedule(delay)
  }

  // A closed client is never running (close() stops it first, and start() refuses), so `running` covers closing.
  function schedule(delayMs: number): void {
    if (!running) return
    if (timer !== null) clock.clearTimeout(timer)
    const delay = Math.max(0, delayMs)
    timerDueAt = clock.now() + delay
    timer = clock.setTimeout(() => {
      timer = null
      timerDueAt = null
      runDrain(false).catch(() => undefined)
    }, delay)
  }

  /** Drains one at a time per instance; the next background pass is planned from the outcome. */
  function runDrain(force: boolean): Promise<DrainResult> {
    const run = chain.then(() => drain(force))
    chain = run.catch(() => undefined)
    const interval = o.syncIntervalMs
    return run.then(
      (result) => {
        schedule(result.waitUntil === null ? interval : Math.min(interval, result.waitUntil - clock.now()))
        return result
      },
      (error: unknown) => {
        schedule(interval)
        feed.refresh()
        throw toSyncClientError(error, 'delivery failed in storage')
      },
    )
  }

  async function drain(force: boolean): Promise<DrainResult> {
    const idle: DrainResult = { delivered: 0, waitUntil: null }
    if (closed) return idle
    if (!o.online.isOnline()) {
      feed.refresh()
      return idle
    }
    const outcome = await lock.run((keepAlive) => pipeline.drain(keepAlive, force), force)
    feed.refresh()
    return outcome.acquired ? outcome.value : idle
  }

  function watchOnline(): void {
    unsubscribeOnline ??= o.online.subscribe((online) => {
      if (!online || closed) {
        feed.refresh()
        return
      }
      // Back online: a fresh backoff schedule and an attempt right away (also when the reset failed).
      const attempt = () => {
        feed.refresh()
        schedule(0)
      }
      store.resetBackoff().then(attempt, attempt)
    })
  }

  function unwatchOnline(): void {
    unsubscribeOnline?.()
    unsubscribeOnline = null
  }

  function post(message: CrossTabMessage): void {
    try {
      channel?.postMessage(message)
    } catch {
      // A closed channel (page going away) must not break delivery.
    }
  }

  /** The outbox content changed: refresh the status here and in other tabs. */
  function changed(): void {
    feed.refresh()
    announceChange()
  }

  /**
   * Tells other tabs at once, then at most once per CROSS_TAB_THROTTLE_MS while changes keep coming (one
   * trailing message covers them): a BroadcastChannel message per write was ~15 % of an awaited update()'s
   * main-thread time in Chromium, and the other tabs re-read the outbox once per message anyway.
   */
  function announceChange(): void {
    if (!channel) return
    if (crossTabTimer !== null) {
      crossTabPending = true
      return
    }
    post({ type: 'changed' })
    crossTabTimer = clock.setTimeout(() => {
      crossTabTimer = null
      if (!crossTabPending) return
      crossTabPending = false
      announceChange()
    }, CROSS_TAB_THROTTLE_MS)
  }

  function emitDelivered(batchId: string, operations: Operation[], info: DeliveryInfo): void {
    for (const listener of [...deliveredListeners]) callSafely(() => listener(batchId, operations, info))
  }

  function stop(): void {
    running = false
    if (timer !== null) clock.clearTimeout(timer)
    timer = null
    timerDueAt = null
    if (feed.listeners.size === 0) unwatchOnline()
  }

  return {
    async insert(collection, record, options = {}) {
      assertOpen()
      checkCollection(collection)
      const json = toJsonObject(record, 'record')
      const recordId = recordIdFor(collection, record, options, o.generateId)
      await commit({ action: 'insert', collection, recordId, record: json, ...baseOf(options.baseRevision) })
      return recordId
    },

    async update(collection, recordId, changes, options = {}) {
      assertOpen()
      await commit({
        action: 'update',
        collection: checkCollection(collection),
        recordId: checkRecordId(recordId),
        changes: toJsonObject(changes, 'changes'),
        ...baseOf(options.baseRevision),
      })
    },

    async delete(collection, recordId, options = {}) {
      assertOpen()
      await commit({
        action: 'delete',
        collection: checkCollection(collection),
        recordId: checkRecordId(recordId),
        ...baseOf(options.baseRevision),
      })
    },

    async enqueue(operation) {
      assertOpen()
      return commit(normalizeOperation(operation))
    },

    pending: async () => (await guard(() => store.snapshot())).pending,

    status: async () => feed.compute(await guard(() => store.snapshot())),

    outbox: () => guard(() => store.outbox()),

    conflicts: () => guard(() => store.conflicts()),

    async resolve(conflictId, resolution) {
      await guard(() => store.resolve(conflictId, resolution, clock.now()))
      changed()
      pushSoon()
    },

    deadLetters: () => guard(() => store.deadLetters()),

    async clearDeadLetters(ids) {
      await guard(() => store.clearDeadLetters(ids))
    },

    async discard(ids) {
      assertOpen()
      return (await loadLazyOps()).discardLoop(ids, { pipeline, store, clock, guard, changed, schedule, assertOpen })
    },

    start() {
      assertOpen()
      if (running) return
      running = true
      watchOnline()
      schedule(0)
    },

    stop,

    retryNow() {
      if (closed) return
      store
        .cutShortNetworkBackoff(clock.now())
        .then((cut) => {
          if (cut === 0 || closed) return
          changed()
          schedule(0)
        })
        .catch(() => undefined) // closed underneath us: nothing left to retry
    },

    async flush() {
      assertOpen()
      const { delivered } = await runDrain(true)
      return { delivered, pending: (await guard(() => store.snapshot())).pending }
    },

    subscribe(listener) {
      assertOpen()
      feed.listeners.add(listener)
      watchOnline()
      feed.refresh()
      return () => {
        feed.listeners.delete(listener)
        if (feed.listeners.size === 0 && !running) unwatchOnline()
      }
    },

    onDelivered(listener) {
      assertOpen()
      deliveredListeners.add(listener)
      return () => {
        deliveredListeners.delete(listener)
      }
    },

    close() {
      if (closing) return closing
      stop()
      closed = true
      shutdown.abort()
      unwatchOnline()
      closing = (async () => {
        await chain
        await lock.release()
        await feed.refreshing
        feed.listeners.clear()
        deliveredListeners.clear()
        if (crossTabTimer !== null) clock.clearTimeout(crossTabTimer)
        if (crossTabPending) post({ type: 'changed' }) // the last changes must still reach the other tabs
        if (channel) {
          channel.onmessage = null
          channel.close()
        }
        store.close()
      })()
      return closing
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
