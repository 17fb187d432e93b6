import { request } from 'node:http'
import { connect } from 'node:net'
import { errorHandler, listen, type RunningServer, SseHub, type SseOpenOptions } from '@flagsync/server-kit'
import express from 'express'
import { afterEach, describe, expect, it } from 'vitest'

const servers: RunningServer[] = []
const hubs: SseHub[] = []
afterEach(async () => {
  for (const hub of hubs.splice(0)) hub.stop()
  for (const server of servers.splice(0)) await server.close()
})

/** Writes that reached the socket's libuv handle (each one a send syscall), per served stream. */
const handleWrites: number[] = []

/** Counts the calls into the socket's native handle: corked chunks leave as one writev. */
function countHandleWrites(socket: unknown): void {
  const handle = (socket as { _handle: Record<string, unknown> })._handle
  const index = handleWrites.push(0) - 1
  for (const name of ['writev', 'writeBuffer', 'writeUtf8String', 'writeLatin1String', 'writeAsciiString']) {
    const original = handle[name]
    if (typeof original !== 'function') continue
    handle[name] = function (this: unknown, ...args: unknown[]) {
      handleWrites[index] = (handleWrites[index] ?? 0) + 1
      return original.apply(this, args)
    }
  }
}

async function serve(options: ConstructorParameters<typeof SseHub>[0], open?: SseOpenOptions) {
  const hub = new SseHub({ keepAliveMs: 0, ...options })
  hubs.push(hub)
  const app = express()
  app.get('/stream', (req, res) => {
    res.setHeader('X-Set-Before', 'kept') // as helmet does in front of the route
    countHandleWrites(req.socket)
    if (open) hub.open(req, res, '', open)
    else hub.open(req, res).write('data: hello\n\n')
  })
  app.use(errorHandler())
  const server = await listen(app, { host: '127.0.0.1', port: 0 })
  servers.push(server)
  return { hub, port: server.port }
}

interface Answer {
  status: number
  headers: Record<string, string | string[] | undefined>
  /** The first chunk of the body (streams stay open). */
  first: string
  close(): void
}

function get(port: number): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path: '/stream', agent: false }, (res) => {
      res.setEncoding('utf8')
      res.once('data', (chunk: string) =>
        resolve({ status: res.statusCode ?? 0, headers: res.headers, first: chunk, close: () => req.destroy() }),
      )
    })
    req.on('error', reject)
    req.end()
  })
}

describe('SseHub', () => {
  it('refuses the stream past maxConnections with 503, Retry-After and a JSON body, also for parallel connects', async () => {
    const { hub, port } = await serve({ maxConnections: 5, retryAfterSeconds: 7 })
    const answers = await Promise.all(Array.from({ length: 12 }, () => get(port)))
    const ok = answers.filter((a) => a.status === 200)
    const refused = answers.filter((a) => a.status !== 200)
    expect(ok).toHaveLength(5)
    expect(refused).toHaveLength(7)
    expect(hub.size()).toBe(5)
    for (const answer of refused) {
      expect(answer.status).toBe(503)
      expect(answer.headers['retry-after']).toBe('7')
      expect(JSON.parse(answer.first)).toEqual({
        error: expect.stringMatching(/too many open streams/),
        code: 'unavailable',
      })
    }
    // A closed stream frees its place.
    ok[0]?.close()
    await expect.poll(() => hub.size(), { timeout: 2000 }).toBe(4)
    const again = await get(port)
    expect(again.status).toBe(200)
    for (const a of [...ok, again]) a.close()
  })

  it('starts every stream with a retry field of the base plus jitter', async () => {
    const { port } = await serve({ retryMs: 1000, random: () => 0.5 })
    const answer = await get(port)
    expect(answer.status).toBe(200)
    expect(answer.first.startsWith('retry: 1500\n\n')).toBe(true)
    answer.close()
    const { port: none } = await serve({ retryMs: 0 })
    const bare = await get(none)
    expect(bare.first.startsWith('data: hello')).toBe(true)
    bare.close()
  })

  it('sends the headers, retry: and an initial chunk in one write, extra headers beside those set before', async () => {
    const bootstrap = Buffer.from(`${'data: x\n\n'.repeat(200)}: bootstrap complete\n\n`)
    const { port } = await serve(
      { retryMs: 1000, random: () => 0.5 },
      { headers: ['X-Extra', 'one'], initial: bootstrap },
    )
    // A raw socket sees what one write put on the wire: the first read holds all of it.
    const socket = connect({ host: '127.0.0.1', port })
    const first = await new Promise<string>((resolve, reject) => {
      socket.once('data', (chunk) => resolve(chunk.toString()))
      socket.once('error', reject)
      socket.write(`GET /stream HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n\r\n`)
    })
    socket.destroy()
    expect(handleWrites.at(-1)).toBe(1)
    const [head = '', body] = first.split('\r\n\r\n')
    expect(head).toMatch(/^HTTP\/1\.1 200 OK\r\n/)
    expect(head).toMatch(/\r\nContent-Type: text\/event-stream; charset=utf-8\r\n/)
    expect(head).toMatch(/\r\nX-Extra: one\r\n/)
    expect(head).toMatch(/\r\nX-Set-Before: kept\r\n/)
    // Chunked encoding frames each part; both parts are in this first read.
    expect(body).toContain('retry: 1500\n\n')
    expect(body).toContain(': bootstrap complete\n\n')
  })

  it('answers HEAD with the stream headers and no body at once, never counting it against the cap', async () => {
    const { hub, port } = await serve({ maxConnections: 2 })
    const headOnce = () =>
      new Promise<{ status: number; type: string | undefined }>((resolve, reject) => {
        const req = request({ host: '127.0.0.1', port, path: '/stream', method: 'HEAD', agent: false }, (res) => {
          res.resume()
          res.on('end', () => resolve({ status: res.statusCode ?? 0, type: res.headers['content-type'] }))
        })
        req.setTimeout(2000, () => req.destroy(new Error('HEAD /stream was held open')))
        req.on('error', reject)
        req.end()
      })
    const heads = await Promise.all([headOnce(), headOnce()])
    expect(heads).toEqual([
      { status: 200, type: 'text/event-stream; charset=utf-8' },
      { status: 200, type: 'text/event-stream; charset=utf-8' },
    ])
    expect(hub.size()).toBe(0)
    const streams = await Promise.all([get(port), get(port)])
    expect(streams.map((s) => s.status)).toEqual([200, 200])
    expect(hub.size()).toBe(2)
    for (const s of streams) s.close()
  })
})
