import type { DeliveryLock } from './delivery-lock.js'
import type { DeliveryPipeline, DrainResult } from './delivery-pipeline.js'
import { toSyncClientError } from './errors.js'
import { loadLazyOps } from './lazy.js'
import type { OutboxDb } from './outbox-db.js'
import type { ResolvedOptions } from './resolve-options.js'
import type { StatusFeed } from './status-feed.js'
import type { SyncClient } from './types.js'

/** What the loop uses of its client besides the outbox, the status feed, the lock and the pipeline. */
export interface LoopHost {
  isClosed(): boolean
  assertOpen(): void
  /** A read of the outbox, refused once closed (the client's `guard`). */
  guard<T>(run: () => Promise<T>): Promise<T>
  /** The outbox changed: status here and in other tabs. */
  changed(): void
}

/**
 * When delivery runs (the background timer, pushes after writes, forced passes, the online watch) and the public
 * methods that drive it. Its public methods go onto the client as they are; the other three stay inside it.
 */
export interface DrainLoop extends Pick<SyncClient, 'start' | 'stop' | 'retryNow' | 'flush' | 'subscribe'> {
  /** Plans the next background pass in `delayMs` (only while running). */
  schedule(delayMs: number): void
  /** A write while started: deliver shortly instead of at the next interval (backoff still applies). */
  pushSoon(): void
  /** Stops for good (close): no more passes or online watch; settles when the drain in progress has. */
  halt(): Promise<unknown>
}

/** See `DrainLoop`. A closed client is never running: close() halts the loop first, and start() refuses. */
export function createDrainLoop(
  o: ResolvedOptions,
  store: OutboxDb,
  feed: StatusFeed,
  lock: DeliveryLock,
  pipeline: DeliveryPipeline,
  isClosed: LoopHost['isClosed'],
  assertOpen: LoopHost['assertOpen'],
  guard: LoopHost['guard'],
  changed: LoopHost['changed'],
): DrainLoop {
  const { clock } = o
  let running = false
  let timer: unknown = null
  /** When the scheduled background pass is due (epoch ms), or null. */
  let timerDueAt: number | null = null
  let chain: Promise<unknown> = Promise.resolve()
  const [watchOnline, unwatchOnline] = onlineWatch(o, store, feed, isClosed, schedule)
  return {
    start() {
      assertOpen()
      if (running) return
      running = true
      watchOnline()
      schedule(0)
    },
    stop,
    retryNow() {
      if (isClosed()) return
      loadLazyOps()
        .then((lazy) => lazy.cutShortNetworkBackoff(store.db, clock.now()))
        .then((cut) => {
          if (cut === 0 || isClosed()) return
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
    schedule,
    pushSoon() {
      if (o.pushDelayMs !== null) schedule(o.pushDelayMs, true)
    },
    halt() {
      stop()
      unwatchOnline()
      return chain
    },
  }
  function stop(): void {
    running = false
    if (timer !== null) clock.clearTimeout(timer)
    timer = null
    timerDueAt = null
    if (feed.listeners.size === 0) unwatchOnline()
  }
  /** Plans the next pass in `delayMs`; `sooner`: only if none is due before then. */
  function schedule(delayMs: number, sooner = false): void {
    const delay = Math.max(0, delayMs)
    if (!running || (sooner && timerDueAt !== null && timerDueAt <= clock.now() + delay)) return
    if (timer !== null) clock.clearTimeout(timer)
    timerDueAt = clock.now() + delay
    timer = clock.setTimeout(() => {
      timer = null
      timerDueAt = null
      runDrain(false).catch(() => undefined)
    }, delay)
  }
  /** Drains one at a time per instance; the next background pass is planned from the outcome. */
  function runDrain(force: boolean): Promise<DrainResult> {
    const run = chain.then(() => drainOnce(o, feed, lock, pipeline, isClosed, force))
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
}

/** One drain now, unless closed or offline: the pipeline runs while this instance holds the delivery lock. */
async function drainOnce(
  o: ResolvedOptions,
  feed: StatusFeed,
  lock: DeliveryLock,
  pipeline: DeliveryPipeline,
  isClosed: () => boolean,
  force: boolean,
): Promise<DrainResult> {
  const idle: DrainResult = { delivered: 0, waitUntil: null }
  if (isClosed()) return idle
  if (!o.online.isOnline()) {
    feed.refresh()
    return idle
  }
  const outcome = await lock.run((keepAlive) => pipeline.drain(keepAlive, force), force)
  feed.refresh()
  return outcome.acquired ? outcome.value : idle
}

/**
 * Follows online/offline (subscribed while the loop runs or someone listens to the status): back online, the
 * backoff starts afresh and an attempt is made at once (also when the reset failed).
 */
function onlineWatch(
  o: ResolvedOptions,
  store: OutboxDb,
  feed: StatusFeed,
  isClosed: () => boolean,
  schedule: (delayMs: number) => void,
): [watch: () => void, unwatch: () => void] {
  let unsubscribe: (() => void) | null = null
  return [
    () => {
      unsubscribe ??= o.online.subscribe((online) => {
        if (!online || isClosed()) {
          feed.refresh()
          return
        }
        const attempt = () => {
          feed.refresh()
          schedule(0)
        }
        loadLazyOps()
          .then((lazy) => lazy.resetBackoff(store.db))
          .then(attempt, attempt)
      })
    },
    () => {
      unsubscribe?.()
      unsubscribe = null
    },
  ]
}
