import { type IncomingMessage, request } from 'node:http'
import { createParser, type EventSourceMessage } from 'eventsource-parser'

/**
 * An SSE stream whose client does not read until told to: node:http stops
 * reading the socket once its small response buffer is full, so whatever the
 * server writes next stays queued on the server (the kernel's socket buffers
 * hold only part of it).
 */
export interface HeldSse {
  readonly status: number
  /** Events parsed so far (none until `read`). */
  readonly events: EventSourceMessage[]
  /** Starts reading: what the server queued meanwhile arrives first, in order. */
  read(): void
  /** Resolves with the first event at or after `from` matching `predicate` (call `read` first). */
  waitFor(predicate: (e: EventSourceMessage) => boolean, timeoutMs?: number, from?: number): Promise<EventSourceMessage>
  /** Resolves when the server ends or drops the stream. */
  readonly ended: Promise<void>
  close(): void
}

/** Opens `url` with a GET and resolves once the response headers are in, without reading the body. */
export function openHeldSse(url: string, headers: Record<string, string> = {}): Promise<HeldSse> {
  return new Promise((resolve, reject) => {
    const req = request(url, { headers: { Accept: 'text/event-stream', ...headers } })
    req.once('error', reject)
    req.once('response', (res) => resolve(held(res)))
    req.end()
  })
}

function held(res: IncomingMessage): HeldSse {
  const events: EventSourceMessage[] = []
  const waiters = new Set<() => void>()
  const parser = createParser({ onEvent: (e) => events.push(e) })
  const ended = new Promise<void>((resolve) => {
    res.socket.once('close', () => resolve())
  })
  res.socket.once('close', () => {
    for (const w of waiters) w()
  })
  res.on('error', () => {}) // a dropped stream is an outcome the tests check, not a failure
  const waitFor: HeldSse['waitFor'] = (predicate, timeoutMs = 10_000, from = 0) =>
    new Promise((resolve, reject) => {
      const check = () => {
        const found = events.slice(from).find(predicate)
        if (found) {
          cleanup()
          resolve(found)
        } else if (res.socket.destroyed && res.readableEnded) {
          cleanup()
          reject(new Error(`the stream ended first; got ${events.length} events`))
        }
      }
      const timer = setTimeout(() => {
        cleanup()
        reject(new Error(`timed out after ${timeoutMs} ms; got ${events.length} events`))
      }, timeoutMs)
      const cleanup = () => {
        clearTimeout(timer)
        waiters.delete(check)
      }
      waiters.add(check)
      check()
    })
  return {
    status: res.statusCode ?? 0,
    events,
    read() {
      res.setEncoding('utf8')
      // The parser gets whole events only: fed a long event chunk by chunk, it would rescan it every time.
      let pending = ''
      res.on('data', (text: string) => {
        const tail = pending.slice(-1)
        const at = (tail + text).lastIndexOf('\n\n')
        if (at === -1) {
          pending += text
          return
        }
        const cut = at + 2 - tail.length
        parser.feed(pending + text.slice(0, cut))
        pending = text.slice(cut)
        for (const w of waiters) w()
      })
      res.on('end', () => {
        for (const w of waiters) w()
      })
    },
    waitFor,
    ended,
    close: () => res.destroy(),
  }
}
