import { type RetryPolicy, retryDelay } from '@flagsync/protocol'
import { readEventStream } from '../read-event-stream.js'
import type { Clock } from '../types.js'

export interface RefreshStreamDeps {
  fetch: typeof fetch
  headers: Record<string, string>
  clock: Clock
  random: () => number
  policy: RetryPolicy
  /** A `refetchEvaluation` arrived: re-fetch, passing its etag back. */
  refetch(etag: string | undefined): void
  /** The stream failed or ended; it reconnects after a backoff. */
  dropped(): void
  /** The stream reconnected after a failure: a change may have gone unannounced meanwhile. */
  reconnected(): void
}

/**
 * Follows an OFREP refresh stream (the bulk answer's `eventStreams`): one connection at a time, through the same
 * SSE reader as the flag stream, reconnecting with backoff and `Last-Event-ID` (the server then announces a change
 * missed meanwhile at once). `follow(url)` with the URL it already follows changes nothing.
 */
export class RefreshStream {
  readonly #deps: RefreshStreamDeps
  #url: string | undefined
  #controller: AbortController | undefined
  #lastEventId: string | undefined
  #timer: unknown
  #wake: (() => void) | undefined

  constructor(deps: RefreshStreamDeps) {
    this.#deps = deps
  }

  /** The URL followed now; undefined before the first answer named one, and after `close()`. */
  get url(): string | undefined {
    return this.#url
  }

  follow(url: string): void {
    if (url === this.#url) return
    this.close()
    this.#url = url
    void this.#loop(url)
  }

  close(): void {
    this.#url = undefined
    this.#controller?.abort()
    this.#deps.clock.clearTimeout(this.#timer)
    this.#wake?.()
  }

  async #loop(url: string): Promise<void> {
    let attempt = 0
    while (this.#url === url) {
      const controller = new AbortController()
      this.#controller = controller
      const headers: Record<string, string> = { ...this.#deps.headers }
      if (this.#lastEventId !== undefined) headers['Last-Event-ID'] = this.#lastEventId
      if (attempt > 0) this.#deps.reconnected()
      try {
        await readEventStream(this.#deps.fetch, url, headers, controller.signal, {
          onEvent: (event) => {
            attempt = 0
            if (event.id !== undefined) this.#lastEventId = event.id
            if (event.event !== undefined && event.event !== 'message') return
            const data = parse(event.data)
            if (data?.type === 'refetchEvaluation') {
              this.#deps.refetch(typeof data.etag === 'string' ? data.etag : undefined)
            }
          },
        })
      } catch {} // refused, cut off or aborted: the loop decides
      if (this.#url !== url) return
      this.#deps.dropped()
      await new Promise<void>((resolve) => {
        this.#wake = resolve
        this.#timer = this.#deps.clock.setTimeout(
          resolve,
          retryDelay(attempt++, null, this.#deps.policy, this.#deps.random),
        )
      })
    }
  }
}

function parse(text: string): { type?: unknown; etag?: unknown } | undefined {
  try {
    const data: unknown = JSON.parse(text)
    return typeof data === 'object' && data !== null ? data : undefined
  } catch {
    return undefined
  }
}
