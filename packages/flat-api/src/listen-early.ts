import { createServer, type IncomingMessage, type RequestListener, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'

// Only node builtins here: the CLI imports this before Express, knex and the
// store (most of its startup time), so the port is bound in milliseconds.

export interface ListenEarlyOptions {
  host: string
  port: number
  /** Idle keep-alive timeout, ms (default 65 000), as server-kit's `listen`. */
  keepAliveTimeoutMs?: number
  /**
   * Pending-connection queue (default 4 096; the kernel caps it at
   * net.core.somaxconn). Node's default, 511, overflows when thousands of
   * stream clients come back at once while the process is still starting:
   * Linux then drops their SYNs and they wait a second or more to retry.
   */
  backlog?: number
  /**
   * Answered at once while starting, not held (default `/health`): 503
   * `unavailable` with Retry-After, so a load balancer's probe learns "not
   * ready" within its timeout instead of timing out, and sends no traffic yet.
   */
  healthPath?: string
}

// server-kit's `unavailable` error, written by hand: this module loads before server-kit does.
const STARTING = JSON.stringify({ error: 'starting: the flags are not loaded yet', code: 'unavailable' })

export interface EarlyServer {
  readonly server: Server
  readonly url: string
  readonly port: number
  /** Requests that arrived before `serve`, waiting for it. */
  readonly held: number
  /** Starts answering with `handler`: the held requests first, in arrival order. */
  serve(handler: RequestListener): void
  /** Stops listening and ends every connection, held ones included. */
  close(): Promise<void>
}

/**
 * Binds the port before the application exists and holds what arrives until
 * `serve`: clients of a restarted server connect at once instead of being
 * refused and retrying on their own backoff, and get answered as soon as the
 * flags are loaded.
 */
export async function listenEarly(options: ListenEarlyOptions): Promise<EarlyServer> {
  let handler: RequestListener | undefined
  let held: Array<[IncomingMessage, ServerResponse]> = []
  const healthPath = options.healthPath ?? '/health'
  const server = createServer((req, res) => {
    if (handler) handler(req, res)
    else if (req.url === healthPath && (req.method === 'GET' || req.method === 'HEAD')) {
      res.writeHead(503, {
        'content-type': 'application/json; charset=utf-8',
        'content-length': Buffer.byteLength(STARTING),
        'retry-after': '1',
        'cache-control': 'no-store',
      })
      res.end(req.method === 'HEAD' ? undefined : STARTING)
    } else held.push([req, res])
  })
  server.keepAliveTimeout = options.keepAliveTimeoutMs ?? 65_000
  server.headersTimeout = server.keepAliveTimeout + 1_000
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen({ port: options.port, host: options.host, backlog: options.backlog ?? 4096 }, () => {
      server.off('error', reject)
      resolve()
    })
  })
  const address = server.address() as AddressInfo
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address
  return {
    server,
    port: address.port,
    url: `http://${host}:${address.port}`,
    get held() {
      return held.length
    },
    serve(next) {
      handler = next
      const waiting = held
      held = []
      // A client that left while held is gone: answering it would register a stream that never closes.
      for (const [req, res] of waiting) if (!req.socket.destroyed) next(req, res)
    },
    close: () =>
      new Promise<void>((resolve) => {
        held = []
        server.close(() => resolve())
        server.closeAllConnections()
      }),
  }
}
