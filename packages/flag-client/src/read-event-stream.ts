import { createParser, type EventSourceMessage } from 'eventsource-parser'

export interface StreamHandlers {
  onEvent(event: EventSourceMessage): void
  onComment?(comment: string): void
}

/**
 * The stream's server answered with an error status instead of an event stream (401 for a bad SDK key,
 * 503 when it is full, ...); the flag client reports it in `status().lastError` and reconnects with backoff.
 */
export class StreamHttpError extends Error {
  /** Always `'StreamHttpError'`, so logs and `error.name` checks tell it apart after bundling. */
  override readonly name = 'StreamHttpError'
  /** The HTTP status of the refused connection; 0 when a 200 response did not start like a flag stream. */
  readonly status: number

  constructor(status: number, message: string) {
    super(message)
    this.status = status
  }
}

/**
 * Opens an SSE stream with fetch (so the key can travel in a header) and feeds
 * events to the handlers until the stream ends or the signal aborts.
 */
export async function readEventStream(
  fetchImpl: typeof fetch,
  url: string,
  headers: Record<string, string>,
  signal: AbortSignal,
  handlers: StreamHandlers,
): Promise<void> {
  const res = await fetchImpl(url, { headers: { Accept: 'text/event-stream', ...headers }, signal, cache: 'no-store' })
  if (!res.ok || !res.body) {
    const body = await res.text().catch(() => '')
    throw new StreamHttpError(res.status, `stream answered ${res.status}${body ? `: ${body.slice(0, 200)}` : ''}`)
  }
  const parser = createParser({ onEvent: handlers.onEvent, onComment: handlers.onComment })
  const reader = res.body.getReader()
  const decoder = new TextDecoder()
  try {
    for (;;) {
      const { done, value } = await reader.read()
      if (done) return
      parser.feed(decoder.decode(value, { stream: true }))
    }
  } finally {
    reader.releaseLock()
  }
}
