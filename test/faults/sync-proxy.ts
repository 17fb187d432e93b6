import { createServer, type IncomingHttpHeaders, type IncomingMessage, request, type ServerResponse } from 'node:http'
import type { AddressInfo, Socket } from 'node:net'

/** One POST /sync the proxy saw: what the browser sent and what the server answered. */
interface SyncExchange {
  batchId: string
  operations: unknown[]
  /** The server's status and parsed answer; undefined while the server has not answered. */
  status?: number
  answer?: { batchId?: string; applied?: number; duplicate?: boolean }
  /** True when the answer was kept from the browser (hold mode). */
  held: boolean
}

export interface SyncProxy {
  /** The proxy's origin, e.g. http://127.0.0.1:41234 (the page's origin, so keep one proxy per test). */
  url: string
  /** `hold`: /sync requests reach the server, but the server's answers never reach the browser. */
  mode: 'pass' | 'hold'
  readonly exchanges: SyncExchange[]
  /** Resolves with the first exchange (from index `from`) matching `predicate` once the server answered it. */
  waitForExchange(predicate: (e: SyncExchange) => boolean, timeoutMs: number, from?: number): Promise<SyncExchange>
  close(): Promise<void>
}

const HOP_BY_HOP = ['connection', 'keep-alive', 'transfer-encoding', 'upgrade', 'proxy-connection', 'te', 'trailer']

function forwardHeaders(headers: IncomingHttpHeaders, host: string): IncomingHttpHeaders {
  const out: IncomingHttpHeaders = { ...headers, host }
  for (const name of HOP_BY_HOP) delete out[name]
  return out
}

/**
 * A tiny HTTP proxy in front of the flag API: forwards everything (the
 * console, /api, /stream as a stream, /sync), and records every /sync
 * exchange. In `hold` mode a /sync request is forwarded and answered by the
 * server, but the answer is never returned to the browser: the request stays
 * open, as when a client dies after its request left and before the answer came.
 */
export async function startSyncProxy(target: string): Promise<SyncProxy> {
  const upstream = new URL(target)
  const exchanges: SyncExchange[] = []
  const waiters = new Set<() => void>()
  const notify = () => {
    for (const w of waiters) w()
  }
  const sockets = new Set<Socket>()

  const forward = (req: IncomingMessage, res: ServerResponse, body?: Buffer) =>
    request(
      {
        host: upstream.hostname,
        port: upstream.port,
        method: req.method,
        path: req.url,
        headers: {
          ...forwardHeaders(req.headers, upstream.host),
          ...(body ? { 'content-length': String(body.length) } : {}),
        },
      },
      undefined,
    ).on('error', () => res.destroy())

  const proxy: SyncProxy = {
    url: '',
    mode: 'pass',
    exchanges,
    waitForExchange(predicate, timeoutMs, from = 0) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const found = exchanges.slice(from).find((e) => e.status !== undefined && predicate(e))
          if (found) {
            cleanup()
            resolve(found)
          }
        }
        const timer = setTimeout(() => {
          cleanup()
          reject(new Error(`no matching /sync exchange within ${timeoutMs} ms; saw ${JSON.stringify(exchanges)}`))
        }, timeoutMs)
        const cleanup = () => {
          clearTimeout(timer)
          waiters.delete(check)
        }
        waiters.add(check)
        check()
      })
    },
    async close() {
      for (const socket of sockets) socket.destroy()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }

  const server = createServer((req, res) => {
    res.on('error', () => {})
    req.on('error', () => res.destroy())
    if (req.method === 'POST' && (req.url === '/sync' || req.url?.startsWith('/sync?'))) {
      const chunks: Buffer[] = []
      req.on('data', (c: Buffer) => chunks.push(c))
      req.on('end', () => {
        const body = Buffer.concat(chunks)
        let parsed: { batchId?: unknown; operations?: unknown } = {}
        try {
          parsed = JSON.parse(body.toString('utf8'))
        } catch {
          // forwarded as is; the server answers 400
        }
        const exchange: SyncExchange = {
          batchId: String(parsed.batchId),
          operations: Array.isArray(parsed.operations) ? parsed.operations : [],
          held: proxy.mode === 'hold',
        }
        exchanges.push(exchange)
        const up = forward(req, res, body)
        up.on('response', (answer) => {
          const parts: Buffer[] = []
          answer.on('data', (c: Buffer) => parts.push(c))
          answer.on('end', () => {
            const text = Buffer.concat(parts)
            exchange.status = answer.statusCode
            try {
              exchange.answer = JSON.parse(text.toString('utf8'))
            } catch {
              exchange.answer = undefined
            }
            if (!exchange.held) {
              const headers = forwardHeaders(answer.headers, upstream.host)
              delete headers.host
              res.writeHead(answer.statusCode ?? 502, { ...headers, 'content-length': String(text.length) })
              res.end(text)
            }
            // Held: the browser's request stays open until the browser (or close()) ends it.
            notify()
          })
        })
        up.end(body)
      })
      return
    }
    const up = forward(req, res)
    up.on('response', (answer) => {
      const headers = forwardHeaders(answer.headers, upstream.host)
      delete headers.host
      res.writeHead(answer.statusCode ?? 502, headers)
      res.flushHeaders()
      answer.pipe(res)
    })
    res.on('close', () => up.destroy())
    req.pipe(up)
  })
  server.on('connection', (socket) => {
    socket.setNoDelay(true)
    sockets.add(socket)
    socket.on('close', () => sockets.delete(socket))
  })
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => resolve())
  })
  proxy.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  return proxy
}
