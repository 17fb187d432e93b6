import { createParser, type EventSourceMessage } from 'eventsource-parser'

export interface SseReader {
  /** Every event received so far, in order. */
  readonly events: EventSourceMessage[]
  /** Raw text received, comments included (to check keep-alives and framing). */
  readonly raw: () => string
  /** Resolves when `count` events have arrived in total. */
  waitForCount(count: number, timeoutMs?: number): Promise<EventSourceMessage[]>
  /** Resolves with the first event (at or after `from`) matching `predicate`. */
  waitFor(predicate: (e: EventSourceMessage) => boolean, timeoutMs?: number, from?: number): Promise<EventSourceMessage>
  /** Resolves when the server ends the stream. */
  readonly ended: Promise<void>
  close(): void
}

/** Opens an SSE stream with fetch (headers allowed, unlike EventSource) and collects its events. */
export async function openSse(
  url: string,
  headers: Record<string, string> = {},
): Promise<SseReader & { status: number; headers: Headers }> {
  const controller = new AbortController()
  const res = await fetch(url, { headers: { Accept: 'text/event-stream', ...headers }, signal: controller.signal })
  const events: EventSourceMessage[] = []
  let raw = ''
  const waiters = new Set<() => void>()
  const parser = createParser({
    onEvent: (e) => {
      events.push(e)
      for (const w of waiters) w()
    },
  })
  const ended = (async () => {
    if (!res.body || res.status !== 200) return
    const decoder = new TextDecoder()
    try {
      for await (const chunk of res.body) {
        const text = decoder.decode(chunk as Uint8Array, { stream: true })
        raw += text
        parser.feed(text)
        for (const w of waiters) w()
      }
    } catch {
      // aborted or reset: the stream is over
    }
  })()

  const until = <T>(check: () => T | undefined, timeoutMs: number, what: string) =>
    new Promise<T>((resolve, reject) => {
      const done = () => {
        const value = check()
        if (value !== undefined) {
          cleanup()
          resolve(value)
        }
      }
      const timer = setTimeout(() => {
        cleanup()
        reject(new Error(`timed out after ${timeoutMs} ms waiting for ${what}; got ${JSON.stringify(events)}`))
      }, timeoutMs)
      const cleanup = () => {
        clearTimeout(timer)
        waiters.delete(done)
      }
      waiters.add(done)
      done()
    })

  return {
    status: res.status,
    headers: res.headers,
    events,
    raw: () => raw,
    ended,
    waitForCount: (count, timeoutMs = 5000) =>
      until(() => (events.length >= count ? events.slice(0, count) : undefined), timeoutMs, `${count} events`),
    waitFor: (predicate, timeoutMs = 5000, from = 0) =>
      until(() => events.slice(from).find(predicate), timeoutMs, 'a matching event'),
    close: () => controller.abort(),
  }
}
