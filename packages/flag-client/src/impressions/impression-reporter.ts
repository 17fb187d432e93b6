import {
  IMPRESSION_WIRE_LIMITS,
  type ImpressionWire,
  parseRetryAfter,
  type RetryPolicy,
  resolveRetryPolicy,
  retryDelay,
  wireContext,
  wireUserId,
  wireValue,
} from '@flagsync/protocol'
import type { Clock, FlagEvaluation, ImpressionOptions, ImpressionStatus, OnlineSource } from '../types.js'
import { type ImpressionQueue, MemoryImpressionQueue, type QueuedImpression } from './impression-queue.js'

export { IMPRESSION_WIRE_LIMITS, wireUserId, wireValue } from '@flagsync/protocol'

/** What `ImpressionOptions` defaults to. */
export const IMPRESSION_DEFAULTS = {
  /** The oldest queued impression waits at most this long (ms) for a batch to fill. */
  flushIntervalMs: 2000,
  /** Impressions per request: the service's limit. */
  maxBatch: 500,
  /** Impressions kept while they cannot be delivered; more are dropped and counted. */
  maxQueue: 10_000,
  /** Every evaluation is recorded. */
  sampleRate: 1,
  /** The evaluation context travels with each impression. */
  includeContext: true,
  /** A delivery request is aborted (and retried) after this long (ms). */
  requestTimeoutMs: 30_000,
} as const

/** A claimed batch stays with its tab this much longer than a request may take. */
const LEASE_MARGIN_MS = 30_000

export interface ReporterDeps {
  options: ImpressionOptions
  /** Sent as `Authorization: Bearer`; without one the reporter stays idle (the service needs the SDK key). */
  sdkKey: string | undefined
  /** The service's base URL: impressions go to `<base>api/environments/<id>/impressions`. */
  baseUrl: URL
  /** The flag service's environment from `connected` (or the cache); null for flat-API servers: nothing is recorded. */
  environmentId(): string | null
  queue(): ImpressionQueue
  /** Told of every storage failure (the app hears it as the flag client's `error` event). */
  onError(error: { message: string }): void
  fetch: typeof fetch
  clock: Clock
  random: () => number
  online: OnlineSource
}

/**
 * Records the evaluations made through the flag client and delivers them in
 * batches: durable in IndexedDB while offline or failing, at most 500 per
 * request, retried with the shared backoff (and Retry-After), paused while
 * the device is offline, each batch deleted exactly when the service
 * accepted it (2xx). Impressions are telemetry: a batch the service rejects
 * (a 4xx other than 408, 413 and 429) is dropped, and a full queue drops new
 * records; both are counted in `status().dropped`. Delivery is at least once:
 * a request cut off by `close()` may be sent again by the next session.
 */
export class ImpressionReporter {
  readonly #deps: ReporterDeps
  readonly #enabled: boolean
  readonly #policy: RetryPolicy
  readonly #maxBatch: number
  readonly #maxQueue: number
  readonly #sampleRate: number
  readonly #flushIntervalMs: number
  readonly #owner = Math.random().toString(36).slice(2) + Date.now().toString(36)
  #queue: ImpressionQueue | undefined
  /** The queue once it answered (or the in-memory one that replaced it); nothing is written before. */
  #opened: Promise<ImpressionQueue> | undefined
  #storage: ImpressionStatus['storage'] = 'none'
  #pending: QueuedImpression[] = []
  #persisting: Promise<void> | undefined
  #queued = 0
  /** When the oldest row not yet sent was recorded (0: rows left by an earlier session, due at once). */
  #firstRecordAt: number | null = null
  #batchSize: number
  #attempts = 0
  #nextAttemptAt = 0
  #flushRequested = false
  #flushWaiters: Array<() => void> = []
  #sending = false
  #delivered = 0
  #dropped = 0
  #lastError: ImpressionStatus['lastError'] = null
  #closed = false
  #controller: AbortController | undefined
  #timer: unknown
  #wakeUp: ((how: 'timer' | 'woken') => void) | undefined
  /** A wake that came while the loop was not asleep: its next sleep returns at once (no lost wake-up). */
  #wakePending = false
  #unsubscribeOnline: (() => void) | undefined
  #loopDone: Promise<void> = Promise.resolve()

  constructor(deps: ReporterDeps) {
    this.#deps = deps
    const o = deps.options
    this.#enabled = o.enabled !== false && Boolean(deps.sdkKey)
    const policy = resolveRetryPolicy(o.retry)
    if (typeof policy === 'string') throw new Error(`impressions.${policy}`)
    this.#policy = policy
    this.#maxBatch = clampInt(o.maxBatch ?? IMPRESSION_DEFAULTS.maxBatch, 1, IMPRESSION_WIRE_LIMITS.batch, 'maxBatch')
    this.#batchSize = this.#maxBatch
    this.#maxQueue = clampInt(o.maxQueue ?? IMPRESSION_DEFAULTS.maxQueue, 1, Number.MAX_SAFE_INTEGER, 'maxQueue')
    this.#flushIntervalMs = Math.max(0, o.flushIntervalMs ?? IMPRESSION_DEFAULTS.flushIntervalMs)
    this.#sampleRate = o.sampleRate ?? IMPRESSION_DEFAULTS.sampleRate
    if (!(this.#sampleRate >= 0 && this.#sampleRate <= 1)) throw new Error('impressions.sampleRate must be from 0 to 1')
  }

  /**
   * Opens the queue and starts delivering, rows left by an earlier session
   * first. The flag client calls it once it knows its environment (the flag
   * service's `connected`, or the cache), so nothing is opened against a flat API.
   */
  start(): void {
    if (!this.#enabled || this.#closed || this.#queue) return
    this.#queue = this.#deps.queue()
    this.#opened = this.#open(this.#queue)
    this.#unsubscribeOnline = this.#deps.online.subscribe((online) => {
      if (online) {
        // Back online: a fresh schedule, now.
        this.#attempts = 0
        this.#nextAttemptAt = 0
      }
      this.#wake()
    })
    this.#loopDone = this.#loop()
  }

  /** Records one evaluation (synchronous; written to the queue right after the current task). */
  record(flagKey: string, context: Record<string, unknown> | undefined, evaluation: FlagEvaluation): void {
    if (!this.#enabled || this.#closed || !evaluation.flagFound) return
    const environmentId = this.#deps.environmentId()
    if (environmentId === null) return
    const value = wireValue(evaluation.value)
    if (value === undefined) return
    if (this.#sampleRate < 1 && this.#deps.random() >= this.#sampleRate) return
    if (this.#queued + this.#pending.length >= this.#maxQueue) {
      this.#dropped++
      return
    }
    const now = this.#deps.clock.now()
    const head = JSON.stringify({
      flag_key: flagKey,
      user_id: wireUserId(context?.user_id),
      value,
      evaluated_at: new Date(now).toISOString(),
    } satisfies ImpressionWire)
    const contextJson = this.#deps.options.includeContext === false ? 'null' : wireContext(context)
    const url = new URL(`api/environments/${encodeURIComponent(environmentId)}/impressions`, this.#deps.baseUrl)
    this.#pending.push({
      url: url.toString(),
      json: `${head.slice(0, -1)},"context":${contextJson}}`,
      claimedUntil: 0,
      owner: '',
    })
    this.start()
    // The first record after the queue ran empty starts the flush window; a full batch goes at once.
    const first = this.#firstRecordAt === null
    if (first) this.#firstRecordAt = now
    if (!this.#persisting) this.#persisting = Promise.resolve().then(() => this.#persist())
    if (first || this.#queued + this.#pending.length >= this.#batchSize) this.#wake()
  }

  /**
   * Sends what is queued now, without waiting out the flush interval or a
   * backoff; resolves when the queue is empty, an attempt failed, or the
   * device is offline (never rejects).
   */
  flush(): Promise<void> {
    if (!this.#enabled || this.#closed || !this.#queue) return Promise.resolve()
    return new Promise((resolve) => {
      this.#flushWaiters.push(resolve)
      this.#flushRequested = true
      this.#wake()
    })
  }

  status(): ImpressionStatus {
    return {
      enabled: this.#enabled && !this.#closed,
      queued: this.#queued + this.#pending.length,
      sending: this.#sending,
      delivered: this.#delivered,
      dropped: this.#dropped,
      failures: this.#attempts,
      nextAttemptAt: this.#attempts > 0 ? this.#nextAttemptAt : null,
      lastError: this.#lastError,
      storage: this.#storage,
    }
  }

  /** Writes what is recorded to the queue, stops delivering (cutting off a request in flight) and closes the queue. */
  async close(): Promise<void> {
    if (this.#closed) return
    this.#closed = true
    this.#unsubscribeOnline?.()
    this.#controller?.abort()
    this.#wake()
    await this.#loopDone
    await this.#persist()
    this.#settleFlushes()
    this.#queue?.close()
  }

  /**
   * Reads the queue once (rows left by an earlier session count as queued).
   * A queue that cannot even be read (IndexedDB missing, blocked, or refused,
   * as in some private windows) is replaced by one in memory: impressions
   * are still delivered, only not kept across reloads, and the app is told.
   */
  async #open(queue: ImpressionQueue): Promise<ImpressionQueue> {
    try {
      const leftover = await queue.count()
      this.#queued = Math.max(this.#queued, leftover)
      if (leftover > 0 && this.#firstRecordAt === null) this.#firstRecordAt = 0
      this.#storage = queue instanceof MemoryImpressionQueue ? 'memory' : 'indexeddb'
      return queue
    } catch (error) {
      this.#reportError(`could not read the impression queue, keeping impressions in memory: ${messageOf(error)}`)
      queue.close()
      this.#queue = new MemoryImpressionQueue()
      this.#storage = 'memory'
      return this.#queue
    }
  }

  #reportError(message: string): void {
    this.#lastError = { message }
    try {
      this.#deps.onError({ message })
    } catch {
      // A throwing listener must not stop delivery.
    }
  }

  /** Moves the recorded rows into the queue (one bulk write per burst of evaluations). */
  async #persist(): Promise<void> {
    const queue = this.#opened ? await this.#opened : undefined
    while (this.#pending.length > 0 && queue) {
      const rows = this.#pending
      this.#pending = []
      try {
        await queue.add(rows)
        this.#queued += rows.length
      } catch (error) {
        this.#dropped += rows.length
        this.#reportError(`could not queue impressions: ${messageOf(error)}`)
      }
    }
    this.#persisting = undefined
  }

  async #loop(): Promise<void> {
    const queue = await (this.#opened as Promise<ImpressionQueue>)
    while (!this.#closed) {
      if (!this.#deps.online.isOnline()) {
        this.#settleFlushes()
        await this.#sleep(Number.POSITIVE_INFINITY)
        continue
      }
      const urgent = this.#flushRequested
      const now = this.#deps.clock.now()
      if (!urgent && this.#attempts > 0 && this.#nextAttemptAt > now) {
        // A timer may fire a millisecond early by the clock: when it fired, the attempt is due.
        if ((await this.#sleep(this.#nextAttemptAt - now)) === 'timer') this.#nextAttemptAt = 0
        continue
      }
      await (this.#persisting ?? this.#persist())
      if (this.#closed) break
      // Let a batch fill up: the oldest record waits at most flushIntervalMs.
      const waited = this.#firstRecordAt === null ? Number.POSITIVE_INFINITY : now - this.#firstRecordAt
      if (!urgent && this.#attempts === 0 && this.#queued < this.#batchSize && waited < this.#flushIntervalMs) {
        await this.#sleep(this.#firstRecordAt === null ? Number.POSITIVE_INFINITY : this.#flushIntervalMs - waited)
        continue
      }
      let batch: Array<Required<QueuedImpression>>
      try {
        batch = await queue.claim(
          this.#batchSize,
          this.#owner,
          now,
          now + IMPRESSION_DEFAULTS.requestTimeoutMs + LEASE_MARGIN_MS,
        )
      } catch (error) {
        this.#reportError(`could not read the impression queue: ${messageOf(error)}`)
        this.#fail(null)
        continue
      }
      if (batch.length === 0) {
        // Recorded meanwhile: go round again (the rows are written first).
        if (this.#pending.length > 0 || this.#persisting) continue
        // Empty (or every row is another tab's): sleep until something is recorded, or a lease may have run out.
        this.#firstRecordAt = null
        this.#batchSize = this.#maxBatch
        if (this.#queued > 0) this.#queued = await queue.count().catch(() => this.#queued)
        this.#flushRequested = false
        this.#settleFlushes()
        await this.#sleep(this.#queued > 0 ? IMPRESSION_DEFAULTS.requestTimeoutMs : Number.POSITIVE_INFINITY)
        continue
      }
      await this.#send(queue, batch)
    }
  }

  async #send(queue: ImpressionQueue, batch: Array<Required<QueuedImpression>>): Promise<void> {
    const seqs = batch.map((r) => r.seq)
    const url = batch[0]?.url as string
    const controller = new AbortController()
    this.#controller = controller
    const timeout = this.#deps.clock.setTimeout(() => controller.abort(), IMPRESSION_DEFAULTS.requestTimeoutMs)
    this.#sending = true
    let outcome: 'delivered' | 'rejected' | 'too_large' | 'retry'
    let retryAfterMs: number | null = null
    try {
      const res = await this.#deps.fetch(url, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${this.#deps.sdkKey}` },
        body: `[${batch.map((r) => r.json).join(',')}]`,
        signal: controller.signal,
      })
      const text = await res.text().catch(() => '')
      if (res.ok) outcome = 'delivered'
      else {
        this.#lastError = { message: errorMessage(res.status, text), status: res.status }
        retryAfterMs = parseRetryAfter(res.headers.get('retry-after'), this.#deps.clock.now())
        outcome =
          res.status === 413
            ? 'too_large'
            : res.status === 408 || res.status === 429 || res.status >= 500
              ? 'retry'
              : 'rejected'
      }
    } catch (error) {
      this.#lastError = { message: messageOf(error) }
      outcome = 'retry'
    } finally {
      this.#deps.clock.clearTimeout(timeout)
      this.#sending = false
      this.#controller = undefined
    }
    try {
      if (outcome === 'delivered' || outcome === 'rejected' || (outcome === 'too_large' && batch.length === 1)) {
        await queue.remove(seqs)
        this.#queued = Math.max(0, this.#queued - seqs.length)
        if (outcome === 'delivered') {
          this.#delivered += seqs.length
          this.#attempts = 0
          this.#lastError = null
        } else {
          this.#dropped += seqs.length
        }
      } else {
        await queue.release(seqs)
        if (outcome === 'too_large') this.#batchSize = Math.max(1, Math.floor(batch.length / 2))
        else this.#fail(retryAfterMs)
      }
    } catch (error) {
      this.#reportError(`could not update the impression queue: ${messageOf(error)}`)
      this.#fail(null)
    }
  }

  /** A failed attempt: the next one after the backoff (or Retry-After, when longer); a pending flush ends here. */
  #fail(retryAfterMs: number | null): void {
    this.#attempts++
    this.#nextAttemptAt =
      this.#deps.clock.now() + retryDelay(this.#attempts - 1, retryAfterMs, this.#policy, this.#deps.random)
    this.#flushRequested = false
    this.#settleFlushes()
  }

  #settleFlushes(): void {
    const waiters = this.#flushWaiters
    this.#flushWaiters = []
    for (const resolve of waiters) resolve()
  }

  /** Waits `ms` (forever for Infinity); resolves 'timer' when the time ran out, 'woken' when `wake` ended it. */
  #sleep(ms: number): Promise<'timer' | 'woken'> {
    if (this.#closed || this.#wakePending) {
      this.#wakePending = false
      return Promise.resolve('woken')
    }
    return new Promise((resolve) => {
      this.#wakeUp = resolve
      this.#timer = Number.isFinite(ms)
        ? this.#deps.clock.setTimeout(() => this.#wake('timer'), Math.max(0, ms))
        : undefined
    })
  }

  #wake(how: 'timer' | 'woken' = 'woken'): void {
    if (this.#timer !== undefined) this.#deps.clock.clearTimeout(this.#timer)
    this.#timer = undefined
    const resolve = this.#wakeUp
    this.#wakeUp = undefined
    if (resolve) resolve(how)
    else this.#wakePending = true
  }
}

function clampInt(value: number, min: number, max: number, name: string): number {
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new Error(`impressions.${name} must be an integer from ${min} to ${max}`)
  }
  return value
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error)
}

function errorMessage(status: number, body: string): string {
  try {
    const parsed = JSON.parse(body) as { error?: unknown }
    if (typeof parsed.error === 'string') return `impressions answered ${status}: ${parsed.error}`
  } catch {
    // not JSON
  }
  return `impressions answered ${status}`
}
