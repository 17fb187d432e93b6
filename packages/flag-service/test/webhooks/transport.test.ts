import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import { type ClosableTransport, httpTransport, type PostOptions } from '../../src/webhooks/transport.js'
import { eventually } from './support.js'

/** A target on 127.0.0.1:0 that counts connections and requests; `handle` answers (204 by default). */
interface Target {
  port: number
  connections: { accepted: number; open: number }
  requests: number
  close(): Promise<void>
}

type Handler = (req: IncomingMessage, res: ServerResponse, nth: { request: number; onConnection: number }) => void

async function startTarget(handle: Handler = (_req, res) => res.writeHead(204).end()): Promise<Target> {
  const perSocket = new WeakMap<object, number>()
  const target: Target = {
    port: 0,
    connections: { accepted: 0, open: 0 },
    requests: 0,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  }
  const server: Server = createServer((req, res) => {
    req.resume()
    req.on('end', () => {
      const onConnection = (perSocket.get(req.socket) ?? 0) + 1
      perSocket.set(req.socket, onConnection)
      handle(req, res, { request: ++target.requests, onConnection })
    })
  })
  server.on('connection', (socket) => {
    target.connections.accepted++
    target.connections.open++
    socket.on('close', () => target.connections.open--)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  target.port = (server.address() as AddressInfo).port
  return target
}

const OPTIONS: PostOptions = { timeoutMs: 2000, allowPrivateTargets: true, maxResponseBytes: 4096 }
const HEADERS = { 'content-type': 'application/json', 'webhook-id': 'msg_test' }

describe('the webhook HTTP transport', () => {
  const cleanup: Array<() => unknown> = []
  afterEach(async () => {
    for (const fn of cleanup.splice(0).reverse()) await fn()
  })
  const transportOf = (maxSockets = 4): ClosableTransport => {
    const transport = httpTransport(maxSockets)
    cleanup.push(() => transport.close())
    return transport
  }
  const targetOf = async (handle?: Handler) => {
    const target = await startTarget(handle)
    cleanup.push(() => target.close())
    return target
  }

  it('sends deliveries one after another over one kept-alive connection, closed by close()', async () => {
    const target = await targetOf()
    const transport = transportOf()
    for (let i = 0; i < 5; i++) {
      const res = await transport.post(`http://127.0.0.1:${target.port}/hook`, HEADERS, `{"n":${i}}`, OPTIONS)
      expect(res.status).toBe(204)
    }
    expect(target.requests).toBe(5)
    expect(target.connections.accepted).toBe(1)
    expect(target.connections.open).toBe(1)
    transport.close()
    // Well before the idle timeout: close() ends the connection, not the timer.
    await eventually(() => expect(target.connections.open).toBe(0), 1000)
  })

  it('opens at most maxSockets connections to one target, however many deliveries are in flight', async () => {
    const target = await targetOf((_req, res) => setTimeout(() => res.writeHead(204).end(), 20))
    const transport = transportOf(3)
    const url = `http://127.0.0.1:${target.port}/hook`
    const answers = await Promise.all(Array.from({ length: 12 }, () => transport.post(url, HEADERS, '{}', OPTIONS)))
    expect(answers.map((a) => a.status)).toEqual(Array(12).fill(204))
    expect(target.connections.accepted).toBe(3)
  })

  it('sends a request again on a new connection when the target drops the kept-alive one it arrived on', async () => {
    // The first connection is dropped as its second request arrives, as when an idle timeout races a reuse.
    const target = await targetOf((req, res, nth) => {
      if (nth.request === 2 && nth.onConnection === 2) req.socket.destroy()
      else res.writeHead(204).end()
    })
    const transport = transportOf()
    const statuses: number[] = []
    for (let i = 0; i < 4; i++) {
      statuses.push((await transport.post(`http://127.0.0.1:${target.port}/hook`, HEADERS, '{}', OPTIONS)).status)
    }
    expect(statuses).toEqual([204, 204, 204, 204])
    expect(target.requests).toBe(5)
    // The new connection is kept alive in turn.
    expect(target.connections.accepted).toBe(2)
  })

  it('gets a delivery through when every kept-alive connection it tries is dropped as it is reused', async () => {
    // A target that answers each connection's first request and drops any later one, as a restarted one would.
    const target = await targetOf((req, res, nth) => {
      if (nth.onConnection > 1) req.socket.destroy()
      else res.writeHead(204).end()
    })
    const transport = transportOf(3)
    const url = `http://127.0.0.1:${target.port}/hook`
    await Promise.all(Array.from({ length: 3 }, () => transport.post(url, HEADERS, '{}', OPTIONS)))
    expect(target.connections.accepted).toBe(3)
    expect((await transport.post(url, HEADERS, '{}', OPTIONS)).status).toBe(204)
    // Three kept-alive connections tried and dropped, then a new one.
    expect(target.requests).toBe(7)
    expect(target.connections.accepted).toBe(4)
  })

  it('does not reuse a connection whose request timed out: the next delivery gets its own answer', async () => {
    const target = await targetOf((_req, res, nth) => {
      if (nth.request === 1) setTimeout(() => res.writeHead(500).end('late'), 400)
      else res.writeHead(204).end()
    })
    const transport = transportOf(1)
    const url = `http://127.0.0.1:${target.port}/hook`
    await expect(transport.post(url, HEADERS, '{}', { ...OPTIONS, timeoutMs: 150 })).rejects.toThrow(
      'no answer within 150 ms',
    )
    const next = await transport.post(url, HEADERS, '{}', OPTIONS)
    expect(next).toMatchObject({ status: 204, body: '' })
    expect(target.connections.accepted).toBe(2)
  })

  it('never reuses a connection opened while private targets were allowed once they are not', async () => {
    const target = await targetOf()
    const transport = transportOf()
    // By name: the address policy applies to what `localhost` resolves to, when a connection is opened.
    const url = `http://localhost:${target.port}/hook`
    expect((await transport.post(url, HEADERS, '{}', OPTIONS)).status).toBe(204)
    expect(target.connections.open).toBe(1)
    await expect(transport.post(url, HEADERS, '{}', { ...OPTIONS, allowPrivateTargets: false })).rejects.toThrow(
      /refused: localhost resolves to/,
    )
    expect(target.requests).toBe(1)
  })
})
