import { parseRetryAfter } from '@flagsync/protocol'
import { createParser, type EventSourceMessage } from 'eventsource-parser'

export interface StreamHandlers {
  onEvent(event: EventSourceMessage): void
  onComment(comment: string): void
  /** The server's `retry:`, ms: how long it asks clients to wait before reconnecting. */
  onRetry(ms: number): void
}

/**
 * The stream's server answered with an error status instead of an event stream: 401 or 403 for a key it refuses,
 * 503 when it is full (with `retryAfterMs` from its Retry-After), ...
 */
export class StreamHttpError extends Error {
  /** Always `'StreamHttpError'`, so logs and `error.name` checks tell it apart. */
  override readonly name = 'StreamHttpError'
  /** The HTTP status of the refused connection; 0 when a 200 response did not start like a flag stream. */
  readonly status: number
  /** The response's Retry-After, ms; null when it had none. */
  readonly retryAfterMs: number | null

  constructor(status: number, message: string, retryAfterMs: number | null = null) {
    super(message)
    this.status = status
    this.retryAfterMs = retryAfterMs
  }
}

/**
 * Opens `url` as an SSE stream with fetch (the SDK key travels in a header, the resume point in Last-Event-ID) and
 * feeds its events to the handlers until the stream ends, `signal` aborts, or nothing arrives for `idleTimeoutMs`.
 */
export async function readStream(
  fetchImpl: typeof fetch,
  url: string,
  headers: Record<string, string>,
  signal: AbortSignal,
  handlers: StreamHandlers,
  idleTimeoutMs: number,
): Promise<void> {
  const res = await fetchImpl(url, { headers: { Accept: 'text/event-stream', ...headers }, signal })
  if (!res.ok || !res.body) {
    const body = await res.text().catch(() => '')
    const retryAfter = parseRetryAfter(res.headers.get('retry-after'), Date.now())
    throw new StreamHttpError(
      res.status,
      `stream answered ${res.status}${body ? `: ${body.slice(0, 200)}` : ''}`,
      retryAfter,
    )
  }
  const parser = createParser(handlers)
  const reader = res.body.getReader()
  const decoder = new TextDecoder()
  // The servers send a keep-alive comment every 15 s: a stream silent for longer is a dead connection (a peer
  // gone without closing it), and reading on would wait forever.
  let idle = false
  let timer: ReturnType<typeof setTimeout> | undefined
  const arm = () => {
    clearTimeout(timer)
    timer = setTimeout(() => {
      idle = true
      reader.cancel().catch(() => {})
    }, idleTimeoutMs)
  }
  try {
    for (arm(); ; arm()) {
      const { done, value } = await reader.read()
      if (idle) throw new Error(`the stream sent nothing for ${idleTimeoutMs} ms`)
      if (done) return
      parser.feed(decoder.decode(value, { stream: true }))
    }
  } finally {
    clearTimeout(timer)
    reader.releaseLock()
    await res.body.cancel().catch(() => {})
  }
}
