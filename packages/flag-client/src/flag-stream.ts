import {
  computeBackoff,
  DEFAULT_RETRY_POLICY,
  parseConnectedData,
  parseStreamUpdate,
  type RetryPolicy,
} from '@flagsync/protocol'
import type { EventSourceMessage } from 'eventsource-parser'
import { readEventStream, StreamHttpError } from './read-event-stream.js'
import type { ClientFlag, Clock, OnlineSource } from './types.js'

/** What the stream session reports to the flag store. */
export interface FlagStreamSink {
  /** A connection's bootstrap is complete: this is now the whole server flag set. */
  replaceAll(flags: Map<string, ClientFlag>, environmentId: string | null, connectedAt: number): void
  upsert(flag: ClientFlag): void
  remove(key: string): void
  /** Connection state changed; `failures` counts consecutive failed connections. */
  state(state: 'connecting' | 'live' | 'reconnecting' | 'offline', failures: number, error: Error | null): void
}

export interface FlagStreamOptions {
  url: string
  headers: Record<string, string>
  fetch: typeof fetch
  clock: Clock
  random: () => number
  reconnect: RetryPolicy
  bootstrapIdleMs: number
  online: OnlineSource
}

/** Our flat API ends its bootstrap with this comment; other servers fall back to the idle timer. */
export const BOOTSTRAP_COMPLETE_COMMENT = 'bootstrap complete'

/** The stream's reconnect backoff unless `reconnect` says otherwise: 1 s doubling to 30 s, +0–30 % jitter. */
export const DEFAULT_RECONNECT: RetryPolicy = { ...DEFAULT_RETRY_POLICY, maxMs: 30_000 }

/**
 * Holds one SSE connection open at a time and reconnects with backoff. Each
 * connection rebuilds the flag set from its bootstrap in a staging map and
 * swaps it in whole when the bootstrap is complete, so readers never see an
 * empty or half-built set.
 */
export class FlagStream {
  readonly #options: FlagStreamOptions
  readonly #sink: FlagStreamSink
  #controller: AbortController | undefined
  #sleepTimer: unknown
  #wake: (() => void) | undefined
  #failures = 0
  #closed = false
  #unsubscribeOnline: (() => void) | undefined

  constructor(options: FlagStreamOptions, sink: FlagStreamSink) {
    this.#options = options
    this.#sink = sink
  }

  start(): void {
    // Back online: reconnect now instead of waiting out the backoff; offline: drop the dead connection.
    this.#unsubscribeOnline = this.#options.online.subscribe((online) => {
      if (online) {
        this.#failures = 0
        this.#wakeUp()
      } else {
        this.#controller?.abort()
      }
    })
    void this.#loop()
  }

  close(): void {
    this.#closed = true
    this.#unsubscribeOnline?.()
    this.#controller?.abort()
    this.#wakeUp()
  }

  async #loop(): Promise<void> {
    while (!this.#closed) {
      if (!this.#options.online.isOnline()) {
        this.#sink.state('offline', this.#failures, null)
        await this.#sleep(Number.POSITIVE_INFINITY)
        continue
      }
      let error: Error | null = null
      try {
        await this.#connectOnce()
      } catch (e) {
        error = e instanceof Error ? e : new Error(String(e))
      }
      if (this.#closed) return
      // Losing the network is not the server's failure: wait for it to come back instead.
      if (!this.#options.online.isOnline()) continue
      this.#failures++
      this.#sink.state('reconnecting', this.#failures, error ?? new Error('the stream ended'))
      await this.#sleep(computeBackoff(this.#failures - 1, this.#options.reconnect, this.#options.random))
    }
  }

  async #connectOnce(): Promise<void> {
    const controller = new AbortController()
    this.#controller = controller
    let session: Session | undefined
    try {
      await readEventStream(this.#options.fetch, this.#options.url, this.#options.headers, controller.signal, {
        onEvent: (event) => {
          if (event.event === 'connected') {
            session?.dispose()
            session = new Session(this.#options, this.#sink, event, () => {
              this.#failures = 0
              this.#sink.state('live', 0, null)
            })
          } else {
            session?.handle(event)
          }
        },
        onComment: (comment) => {
          if (comment.trim() === BOOTSTRAP_COMPLETE_COMMENT) session?.complete()
        },
      })
    } finally {
      session?.dispose()
    }
  }

  /** Waits `ms` (forever for Infinity) or until woken by `online` or `close`. */
  #sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      this.#wake = resolve
      this.#sleepTimer = Number.isFinite(ms) ? this.#options.clock.setTimeout(resolve, ms) : undefined
    })
  }

  #wakeUp(): void {
    if (this.#sleepTimer !== undefined) this.#options.clock.clearTimeout(this.#sleepTimer)
    this.#sleepTimer = undefined
    const wake = this.#wake
    this.#wake = undefined
    wake?.()
  }
}

/** One connection: bootstrap into staging, then live updates. */
class Session {
  #staging: Map<string, ClientFlag> | undefined = new Map()
  readonly #environmentId: string | null
  readonly #waitsForReady: boolean
  #idleTimer: unknown
  readonly #connectedAt: number

  readonly #options: FlagStreamOptions
  readonly #sink: FlagStreamSink
  readonly #onLive: () => void

  constructor(options: FlagStreamOptions, sink: FlagStreamSink, connected: EventSourceMessage, onLive: () => void) {
    this.#options = options
    this.#sink = sink
    this.#onLive = onLive
    const data = parseConnectedData(safeJson(connected.data))
    if (data === undefined) throw new StreamHttpError(0, `unexpected connected event: ${connected.data.slice(0, 100)}`)
    this.#environmentId = data === true ? null : data.environment_id
    // The flag service announces the end of its bootstrap with `ready`; the flat API does not.
    this.#waitsForReady = data !== true
    this.#connectedAt = options.clock.now()
    this.#armIdle()
  }

  handle(event: EventSourceMessage): void {
    if (event.event === 'ready') {
      this.complete()
      return
    }
    if (event.event !== 'update') return
    const update = parseStreamUpdate(safeJson(event.data))
    if (!update) return // a malformed update must not break the stream; the next bootstrap repairs it
    if (this.#staging) {
      if (update.type === 'UPSERT') this.#staging.set(update.flag.key, update.flag as ClientFlag)
      else this.#staging.delete(update.key)
      this.#armIdle()
      return
    }
    if (update.type === 'UPSERT') this.#sink.upsert(update.flag as ClientFlag)
    else this.#sink.remove(update.key)
  }

  complete(): void {
    if (!this.#staging) return
    const flags = this.#staging
    this.#staging = undefined
    this.#clearIdle()
    this.#sink.replaceAll(flags, this.#environmentId, this.#connectedAt)
    this.#onLive()
  }

  dispose(): void {
    this.#clearIdle()
  }

  #armIdle(): void {
    if (this.#waitsForReady) return
    this.#clearIdle()
    this.#idleTimer = this.#options.clock.setTimeout(() => this.complete(), this.#options.bootstrapIdleMs)
  }

  #clearIdle(): void {
    if (this.#idleTimer !== undefined) this.#options.clock.clearTimeout(this.#idleTimer)
    this.#idleTimer = undefined
  }
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}
