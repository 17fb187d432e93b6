import type { EvaluableFlag } from '@flagsync/protocol'
import { parseConnectedData, parseStreamUpdate, type RetryPolicy, retryDelay } from '@flagsync/protocol'
import type { EventSourceMessage } from 'eventsource-parser'
import { readStream, StreamHttpError } from './read-stream.js'

/** What the stream reports to the flag store. */
export interface FlagStreamSink {
  /** The whole flag set now (a bootstrap, or a resumed stream's missed changes applied), swapped in at once. */
  replaceAll(flags: Map<string, EvaluableFlag>): void
  upsert(flag: EvaluableFlag): void
  remove(key: string): void
  /** The flags held now: a resumed stream applies its missed changes to a copy of them. */
  current(): ReadonlyMap<string, EvaluableFlag>
  /** The environment the stream's `connected` names: the SDK key's on the flag service, null on the flat API. */
  environment(id: string | null): void
  /** `live` once a connection's flag set is complete; `down` after each failed or ended connection. */
  state(state: 'live' | 'down', error: Error | null): void
}

export interface FlagStreamOptions {
  url: string
  sdkKey: string | undefined
  fetch: typeof fetch
  reconnect: RetryPolicy
  random: () => number
  bootstrapIdleMs: number
  idleTimeoutMs: number
}

/** The flat API ends its bootstrap (and a resumed stream's missed changes) with this comment. */
const BOOTSTRAP_COMPLETE_COMMENT = 'bootstrap complete'

/**
 * Holds one SSE connection to `/stream` open at a time and reconnects with backoff (the server's `retry:` or
 * Retry-After when longer), resuming with Last-Event-ID from the last event applied to a complete flag set. Each
 * connection builds its flag set in a staging map, swapped in when complete, so reads never see a half-built set.
 */
export class FlagStream {
  readonly #options: FlagStreamOptions
  readonly #sink: FlagStreamSink
  #controller: AbortController | undefined
  #timer: ReturnType<typeof setTimeout> | undefined
  #wake: (() => void) | undefined
  #failures = 0
  /** Bumped by `start` and `close`: a loop whose generation is past has been closed and stops. */
  #generation = 0
  /** Where a reconnect resumes: the id of the last event applied to a complete flag set ('' : from scratch). */
  #resumeFrom = ''
  #retryHintMs: number | null = null

  constructor(options: FlagStreamOptions, sink: FlagStreamSink) {
    this.#options = options
    this.#sink = sink
  }

  /** Connects, and keeps reconnecting until `close`; after `close` it may start again. */
  start(): void {
    this.close()
    this.#failures = 0
    void this.#loop(++this.#generation)
  }

  close(): void {
    this.#generation++
    this.#controller?.abort()
    if (this.#timer !== undefined) clearTimeout(this.#timer)
    this.#wake?.()
  }

  async #loop(generation: number): Promise<void> {
    while (generation === this.#generation) {
      let error: Error | null = null
      try {
        await this.#connectOnce()
      } catch (e) {
        error = e instanceof Error ? e : new Error(String(e))
      }
      if (generation !== this.#generation) return
      this.#failures++
      this.#sink.state('down', error ?? new Error('the stream ended'))
      const hint =
        error instanceof StreamHttpError && error.retryAfterMs !== null ? error.retryAfterMs : this.#retryHintMs
      await this.#sleep(retryDelay(this.#failures - 1, hint, this.#options.reconnect, this.#options.random))
    }
  }

  async #connectOnce(): Promise<void> {
    const controller = new AbortController()
    this.#controller = controller
    const headers: Record<string, string> = {}
    if (this.#options.sdkKey) headers.Authorization = `Bearer ${this.#options.sdkKey}`
    if (this.#resumeFrom !== '') headers['Last-Event-ID'] = this.#resumeFrom
    const session = new Session(this.#options.bootstrapIdleMs, this.#sink, this.#resumeFrom, (resumeFrom) => {
      this.#resumeFrom = resumeFrom
    })
    session.onLive = () => {
      this.#failures = 0
      this.#sink.state('live', null)
    }
    try {
      await readStream(
        this.#options.fetch,
        this.#options.url,
        headers,
        controller.signal,
        {
          onEvent: (event) => session.handle(event),
          onComment: (comment) => {
            if (comment.trim() === BOOTSTRAP_COMPLETE_COMMENT) session.complete()
          },
          onRetry: (ms) => {
            this.#retryHintMs = ms
          },
        },
        this.#options.idleTimeoutMs,
      )
    } finally {
      session.dispose()
    }
  }

  #sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      this.#wake = resolve
      this.#timer = setTimeout(resolve, ms)
    })
  }
}

/**
 * One connection. `connected` starts a full bootstrap into an empty staging map; the flat API's `resumed` starts
 * from a copy of the flags held, to which only the missed changes apply. `ready` (the flag service), the
 * bootstrap-complete comment (the flat API) or, from other servers, a quiet `bootstrapIdleMs` completes it.
 */
class Session {
  onLive: () => void = () => {}
  #staging: Map<string, EvaluableFlag> | undefined
  #live = false
  #idleTimer: ReturnType<typeof setTimeout> | undefined
  #waitsForReady = false
  /** The SSE last event id of this connection so far. */
  #lastId: string
  readonly #idleMs: number
  readonly #sink: FlagStreamSink
  readonly #commit: (resumeFrom: string) => void

  constructor(idleMs: number, sink: FlagStreamSink, lastId: string, commit: (resumeFrom: string) => void) {
    this.#idleMs = idleMs
    this.#sink = sink
    this.#lastId = lastId
    this.#commit = commit
  }

  handle(event: EventSourceMessage): void {
    if (event.id !== undefined) this.#lastId = event.id
    if (event.event === 'connected') this.#start(event, new Map())
    else if (event.event === 'resumed') this.#start(event, new Map(this.#sink.current()))
    else if (event.event === 'ready') this.complete()
    else if (event.event === 'update') this.#apply(event)
  }

  #apply(event: EventSourceMessage): void {
    const update = parseStreamUpdate(safeJson(event.data))
    // A malformed update must not break the stream; the next bootstrap repairs it.
    if (!update) return
    if (this.#staging) {
      if (update.type === 'UPSERT') this.#staging.set(update.flag.key, update.flag as EvaluableFlag)
      else this.#staging.delete(update.key)
      this.#armIdle()
    } else if (this.#live) {
      if (update.type === 'UPSERT') this.#sink.upsert(update.flag as EvaluableFlag)
      else this.#sink.remove(update.key)
      this.#commit(this.#lastId)
    }
  }

  complete(): void {
    const flags = this.#staging
    if (!flags) return
    this.#staging = undefined
    this.#live = true
    this.#clearIdle()
    this.#sink.replaceAll(flags)
    this.#commit(this.#lastId)
    this.onLive()
  }

  dispose(): void {
    this.#clearIdle()
  }

  #start(event: EventSourceMessage, staging: Map<string, EvaluableFlag>): void {
    const data = parseConnectedData(safeJson(event.data))
    if (data === undefined) throw new StreamHttpError(0, `unexpected ${event.event} event: ${event.data.slice(0, 100)}`)
    // The flag service announces the end of its bootstrap with `ready`; the flat API with a comment.
    this.#waitsForReady = data !== true
    this.#sink.environment(data === true ? null : data.environment_id)
    this.#staging = staging
    this.#live = false
    this.#armIdle()
  }

  #armIdle(): void {
    if (this.#waitsForReady) return
    this.#clearIdle()
    this.#idleTimer = setTimeout(() => this.complete(), this.#idleMs)
  }

  #clearIdle(): void {
    if (this.#idleTimer !== undefined) clearTimeout(this.#idleTimer)
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
