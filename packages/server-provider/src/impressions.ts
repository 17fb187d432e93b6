import {
  IMPRESSION_WIRE_LIMITS,
  impressionJson,
  parseRetryAfter,
  type RetryPolicy,
  resolveRetryPolicy,
  retryDelay,
  wireContext,
} from '@flagsync/protocol'

/** `FlagsyncServerProviderOptions.impressions` when it is an object; every field is optional. */
export interface ServerImpressionOptions {
  /** The flag service's base URL. Default: the stream URL's directory (`https://flags.example.com/` for `…/stream`). */
  baseUrl?: string
  /** The oldest queued impression waits at most this long for a batch to fill, ms. Default 2000. */
  flushIntervalMs?: number
  /** Impressions per request, 1 to 500 (the service's limit). Default 500. */
  maxBatch?: number
  /** Impressions kept while they cannot be delivered; past it the oldest are dropped (counted). Default 10 000. */
  maxQueue?: number
  /** Send the evaluation context with each impression. Default true. */
  includeContext?: boolean
  /** Backoff of failed deliveries. Default 1 s doubling to 60 s, +0–30 % jitter; a longer Retry-After wins. */
  retry?: Partial<RetryPolicy>
  /** A delivery request is aborted (and retried) after this long, ms. Default 30 000. */
  requestTimeoutMs?: number
  /** Told once when reporting stops for good (a flat API, or no ingest route). Default `console.warn`. */
  onWarning?: (message: string) => void
}

/** The reporter's counters, as `impressionStatus()` returns them. */
export interface ServerImpressionStatus {
  /** False when not asked for, or stopped (closed, or the server has no impression ingest). */
  enabled: boolean
  /** Recorded and not yet delivered, in memory. */
  queued: number
  /** Accepted by the service (a 2xx). */
  delivered: number
  /** Dropped: the oldest past `maxQueue`, a batch the service refused (a 4xx other than 408 and 429), or left on stop. */
  dropped: number
  /** Consecutive failed attempts (network, 408, 429, 5xx). */
  failures: number
  /** Why the last delivery failed; null after a success. */
  lastError: string | null
}

interface Deps {
  options: ServerImpressionOptions
  sdkKey: string
  fetch: typeof fetch
  streamUrl: string
}

/**
 * Records each evaluation as one impression, in memory (serialized once, when recorded), and delivers them in
 * batches to the flag service's `POST /api/environments/<id>/impressions`: a batch goes when it is full or its oldest
 * impression has waited `flushIntervalMs`, one request at a time, retried with the shared backoff on network errors,
 * 408, 429 and 5xx. Recording never waits and never throws. Past `maxQueue` the oldest are dropped and counted.
 */
export class ImpressionReporter {
  readonly #deps: Deps
  readonly #policy: RetryPolicy
  readonly #maxBatch: number
  readonly #maxQueue: number
  readonly #flushIntervalMs: number
  readonly #timeoutMs: number
  readonly #baseUrl: URL
  /** JSON items, oldest first, from `#head` on (dropping the oldest moves the head instead of shifting the array). */
  #items: string[] = []
  #head = 0
  #environmentId: string | null | undefined
  /** For good: the server has no impression ingest. */
  #stopped = false
  /** Between `close()` and the next `open()`. */
  #closed = false
  #sending: Promise<void> | undefined
  #timer: ReturnType<typeof setTimeout> | undefined
  #delivered = 0
  #dropped = 0
  #failures = 0
  #lastError: string | null = null
  #retryAfter: number | null = null
  /** Impressions out in the request in flight. */
  #inFlight = 0

  constructor(deps: Deps) {
    this.#deps = deps
    const o = deps.options
    const policy = resolveRetryPolicy({ maxMs: 60_000, ...o.retry })
    if (typeof policy === 'string') throw new TypeError(`options.impressions.${policy.slice(6)}`)
    this.#policy = policy
    this.#maxBatch = integer(o.maxBatch ?? IMPRESSION_WIRE_LIMITS.batch, 1, IMPRESSION_WIRE_LIMITS.batch, 'maxBatch')
    this.#maxQueue = integer(o.maxQueue ?? 10_000, 1, Number.MAX_SAFE_INTEGER, 'maxQueue')
    this.#flushIntervalMs = Math.min(Math.max(0, o.flushIntervalMs ?? 2000), 2 ** 31 - 1)
    this.#timeoutMs = Math.min(Math.max(1, o.requestTimeoutMs ?? 30_000), 2 ** 31 - 1)
    const base = o.baseUrl ?? new URL('.', deps.streamUrl).toString()
    if (!URL.canParse(base)) throw new TypeError(`options.impressions.baseUrl must be a URL (got ${base})`)
    this.#baseUrl = new URL(base.endsWith('/') ? base : `${base}/`)
  }

  /**
   * The environment from the stream's `connected` event: the flag service names the SDK key's; the flat API sends
   * none (it has no impression ingest), and reporting stops with one warning.
   */
  environment(id: string | null): void {
    if (this.#stopped || id === this.#environmentId) return
    this.#environmentId = id
    if (id === null) this.#stop('the stream is the flat API’s, which takes no impressions')
    else if (this.#size() > 0) this.#schedule()
  }

  /** Records again after `close()` (the provider initialized again). */
  open(): void {
    this.#closed = false
  }

  /** Queues one impression; synchronous, never throws. */
  record(flagKey: string, userId: unknown, value: unknown, context: Record<string, unknown>): void {
    if (this.#stopped || this.#closed) return
    const contextJson = this.#deps.options.includeContext === false ? 'null' : wireContext(context)
    const json = impressionJson(
      { flag_key: flagKey, user_id: userId, value, evaluated_at: new Date().toISOString() },
      contextJson,
    )
    if (json === undefined) return
    this.#items.push(json)
    this.#trim()
    // A full batch goes at once, unless deliveries are failing: then the backoff's timer stands.
    if (this.#size() >= this.#maxBatch && this.#failures === 0) this.#schedule(0)
    else if (this.#timer === undefined) this.#schedule()
  }

  status(): ServerImpressionStatus {
    return {
      enabled: !this.#stopped && !this.#closed,
      queued: this.#size(),
      delivered: this.#delivered,
      dropped: this.#dropped,
      failures: this.#failures,
      lastError: this.#lastError,
    }
  }

  /**
   * Sends everything queued now, without waiting out the flush interval or a backoff, and stops recording: one
   * attempt per batch; what a failed attempt leaves is dropped (counted).
   */
  async close(): Promise<void> {
    if (this.#stopped || this.#closed) return
    this.#closed = true
    this.#clearTimer()
    await this.#sending
    while (this.#environmentId && this.#size() > 0 && !this.#stopped) {
      if (!(await this.#sendBatch())) break
    }
    this.#dropQueued()
  }

  /** Impressions held: queued, and out in a request. */
  #size(): number {
    return this.#items.length - this.#head + this.#inFlight
  }

  /** Drops the oldest queued impressions past `maxQueue` (those out in a request stay until it answers). */
  #trim(): void {
    const count = Math.min(this.#size() - this.#maxQueue, this.#items.length - this.#head)
    if (count > 0) {
      this.#head += count
      this.#dropped += count
    }
    // Reclaims the dropped and sent head once it is most of the array (shifting each time would copy it all).
    if (this.#head > 1024 && this.#head * 2 > this.#items.length) {
      this.#items = this.#items.slice(this.#head)
      this.#head = 0
    }
  }

  #dropQueued(): void {
    this.#dropped += this.#items.length - this.#head
    this.#items = []
    this.#head = 0
  }

  #stop(warning: string): void {
    this.#stopped = true
    this.#clearTimer()
    this.#dropQueued()
    this.#warn(warning)
  }

  /** Arms the send timer (the flush interval unless `ms` says sooner); the timer never keeps the process alive. */
  #schedule(ms = this.#flushIntervalMs): void {
    if (this.#stopped || this.#closed || this.#sending || !this.#environmentId) return
    this.#clearTimer()
    this.#timer = setTimeout(() => {
      this.#timer = undefined
      this.#sending = this.#pump().finally(() => {
        this.#sending = undefined
        this.#afterPump()
      })
    }, ms)
    this.#timer.unref?.()
  }

  /** Sends full batches (and the one due) until the queue is empty or an attempt fails. */
  async #pump(): Promise<void> {
    do {
      if (!(await this.#sendBatch())) return
    } while (this.#size() >= this.#maxBatch)
  }

  #afterPump(): void {
    if (this.#stopped || this.#closed || this.#size() === 0) return
    if (this.#failures > 0) this.#schedule(retryDelay(this.#failures - 1, this.#retryAfter, this.#policy, Math.random))
    else this.#schedule()
  }

  /** One request with the oldest batch; true when it left the queue (delivered, or refused for good). */
  async #sendBatch(): Promise<boolean> {
    const batch = this.#items.slice(this.#head, this.#head + this.#maxBatch)
    this.#head += batch.length
    this.#inFlight = batch.length
    const url = new URL(`api/environments/${encodeURIComponent(this.#environmentId ?? '')}/impressions`, this.#baseUrl)
    let outcome: 'delivered' | 'refused' | 'retry' | 'absent'
    try {
      const res = await this.#deps.fetch(url, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${this.#deps.sdkKey}` },
        body: `[${batch.join(',')}]`,
        signal: AbortSignal.timeout(this.#timeoutMs),
      })
      const text = await res.text().catch(() => '')
      this.#retryAfter = parseRetryAfter(res.headers.get('retry-after'), Date.now())
      outcome = res.ok ? 'delivered' : res.status === 404 ? 'absent' : retryable(res.status) ? 'retry' : 'refused'
      this.#lastError = res.ok ? null : `impressions answered ${res.status}${text ? `: ${text.slice(0, 200)}` : ''}`
    } catch (error) {
      this.#retryAfter = null
      this.#lastError = error instanceof Error ? error.message : String(error)
      outcome = 'retry'
    }
    this.#inFlight = 0
    if (outcome === 'delivered') {
      this.#delivered += batch.length
      this.#failures = 0
      return true
    }
    if (outcome === 'refused') {
      this.#dropped += batch.length
      this.#warn(`a batch was refused: ${this.#lastError}`)
      return true
    }
    // Back at the front, oldest first; what recording added meanwhile may now push the oldest out.
    this.#items = batch.concat(this.#items.slice(this.#head))
    this.#head = 0
    this.#trim()
    if (outcome === 'absent') this.#stop(`${url.href} answered 404 (no impression ingest): reporting stopped`)
    else this.#failures++
    return false
  }

  #warn(message: string): void {
    try {
      ;(this.#deps.options.onWarning ?? console.warn)(`@flagsync/server-provider impressions: ${message}`)
    } catch {
      // The app's handler failing must not reach the stream or the delivery loop.
    }
  }

  #clearTimer(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer)
    this.#timer = undefined
  }
}

function retryable(status: number): boolean {
  return status === 408 || status === 429 || status >= 500
}

function integer(value: number, min: number, max: number, name: string): number {
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new TypeError(`options.impressions.${name} must be an integer from ${min} to ${max}`)
  }
  return value
}
