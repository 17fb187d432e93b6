import { createServer, type RequestListener, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'

export interface ListenOptions {
  host?: string
  port?: number
  /**
   * Idle keep-alive timeout, ms (default 65 000). Keep it above the load
   * balancer's idle timeout (60 s on AWS ALB, nginx) or the balancer will
   * reuse sockets Node has already closed and answer 502.
   */
  keepAliveTimeoutMs?: number
}

export interface RunningServer {
  server: Server
  url: string
  port: number
  close(): Promise<void>
}

/** Starts an HTTP server and resolves once it listens; `close` also ends idle and streaming sockets. */
export async function listen(handler: RequestListener, options: ListenOptions = {}): Promise<RunningServer> {
  const server = createServer(handler)
  server.keepAliveTimeout = options.keepAliveTimeoutMs ?? 65_000
  server.headersTimeout = server.keepAliveTimeout + 1_000
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(options.port ?? 0, options.host ?? '127.0.0.1', () => {
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
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve())
        server.closeAllConnections()
      }),
  }
}
