import { type IncomingMessage, request } from 'node:http'
import { listen, type RunningServer, type SseConnection, SseHub } from '@flagsync/server-kit'
import express from 'express'
import { afterEach, describe, expect, it } from 'vitest'

const CAP = 64 * 1024
/** 8 MB: more than the kernel's socket buffers hold on loopback, so most of it stays queued in the server. */
const BIG = Buffer.alloc(8 * 1024 * 1024, 'x')
const frame = (n: number, size = 16_000) => `data: ${`${n}`.padEnd(size - 8, '.')}\n\n`

const servers: RunningServer[] = []
const hubs: SseHub[] = []
const clients: IncomingMessage[] = []
afterEach(async () => {
  for (const res of clients.splice(0)) res.destroy()
  for (const hub of hubs.splice(0)) hub.stop()
  for (const server of servers.splice(0)) await server.close()
})

/** A hub whose /stream bootstraps each subscriber as `bootstrap` says; resolves the connection once the client has the headers. */
async function serve(
  bootstrap: (hub: SseHub, req: express.Request, res: express.Response) => SseConnection,
  keepAliveMs = 0,
) {
  const hub = new SseHub({ keepAliveMs, retryMs: 0, maxBufferedBytes: CAP })
  hubs.push(hub)
  const opened: SseConnection[] = []
  const app = express()
  app.get('/stream', (req, res) => {
    opened.push(bootstrap(hub, req, res))
  })
  const server = await listen(app, { host: '127.0.0.1', port: 0 })
  servers.push(server)
  const subscribe = async () => {
    const res = await new Promise<IncomingMessage>((resolve, reject) => {
      const req = request({ host: '127.0.0.1', port: server.port, path: '/stream', agent: false }, resolve)
      req.once('error', reject)
      req.end()
    })
    clients.push(res)
    res.on('error', () => {}) // a dropped stream is what some tests expect
    const conn = opened.at(-1)
    if (!conn) throw new Error('no stream opened')
    return { conn, res }
  }
  return { hub, subscribe }
}

/** Reads the (paused) body until it ends or `until` appears; resolves what came. */
function readBody(res: IncomingMessage, until: string): Promise<string> {
  return new Promise((resolve) => {
    const chunks: string[] = []
    let tail = ''
    const done = () => resolve(chunks.join(''))
    res.setEncoding('utf8')
    res.on('data', (chunk: string) => {
      chunks.push(chunk)
      if ((tail + chunk).includes(until)) done()
      tail = chunk.slice(-until.length)
    })
    res.once('close', done)
  })
}

describe('SseHub: STREAM_MAX_BUFFER_BYTES counts what is queued behind a bootstrap', () => {
  it('a subscriber that reads late gets an 8 MB `initial` and the frames written meanwhile, past a 64 KiB cap', async () => {
    const { hub, subscribe } = await serve((h, req, res) => h.open(req, res, '', { initial: BIG }))
    const { conn, res } = await subscribe()
    expect([conn.write(frame(1)), conn.write(frame(2))]).toEqual([true, true])
    await new Promise((resolve) => setTimeout(resolve, 50)) // the socket has had its chance to drain
    expect(conn.write(frame(3))).toBe(true)

    const body = await readBody(res, frame(3))
    expect(body).toBe(BIG.toString() + frame(1) + frame(2) + frame(3))
    expect(hub.droppedCount).toBe(0)
  })

  it('a bootstrap in several writeBootstrap chunks is written whole, then live frames follow it', async () => {
    const { hub, subscribe } = await serve((h, req, res) => {
      const conn = h.open(req, res)
      expect([conn.writeBootstrap('event: connected\ndata: {}\n\n'), conn.writeBootstrap(BIG)]).toEqual([true, true])
      expect(conn.writeBootstrap('event: ready\ndata: "1"\n\n')).toBe(true)
      return conn
    })
    const { conn, res } = await subscribe()
    expect(conn.write(frame(1))).toBe(true)

    const body = await readBody(res, frame(1))
    expect(body).toBe(`event: connected\ndata: {}\n\n${BIG.toString()}event: ready\ndata: "1"\n\n${frame(1)}`)
    expect(hub.droppedCount).toBe(0)
  })

  it('a subscriber that never reads is dropped at the first write after more than the cap queued behind its bootstrap', async () => {
    const { hub, subscribe } = await serve((h, req, res) => h.open(req, res, '', { initial: BIG }))
    const { conn, res } = await subscribe()
    // One synchronous step: nothing leaves the socket in between, so what is queued behind the bootstrap is exact.
    // 4 × 16 000 = 64 000 ≤ 65 536 queued before the fifth write; 80 000 before the sixth, which drops the stream.
    const results = Array.from({ length: 7 }, (_, i) => conn.write(frame(i)))
    expect(results).toEqual([true, true, true, true, true, false, false])
    expect(hub.droppedCount).toBe(1)
    await expect.poll(() => hub.size()).toBe(0)
    const body = await readBody(res, '\0') // reads until the server's close
    expect(body.length).toBeLessThan(BIG.length)
  })

  it('a subscriber that reads its bootstrap and then stops reading is dropped once more than the cap piles up', async () => {
    const { hub, subscribe } = await serve((h, req, res) => h.open(req, res, '', { initial: 'data: hi\n\n' }))
    const { conn, res } = await subscribe()
    await readBody(res, 'data: hi\n\n')
    res.pause()
    // 16 KB frames with pauses for the socket to flush: the kernel's buffers fill first, then the queue passes the cap.
    let writes = 0
    while (conn.write(frame(writes))) {
      writes++
      if (writes % 32 === 0) await new Promise((resolve) => setTimeout(resolve, 5))
      if (writes > 2000) throw new Error('never dropped')
    }
    expect(hub.droppedCount).toBe(1)
  })

  it('with no change to queue behind it, a subscriber that reads nothing for a keep-alive interval is dropped once more than the cap is queued', async () => {
    const { hub, subscribe } = await serve((h, req, res) => h.open(req, res, '', { initial: BIG }), 100)
    const stalled = await subscribe()
    const reading = await subscribe()
    const reader = readBody(reading.res, '\0')
    // Two ticks: the first notes what was sent, the second finds nothing more sent with 8 MB still queued.
    await expect.poll(() => hub.droppedCount, { timeout: 2000 }).toBe(1)
    await expect.poll(() => hub.size()).toBe(1)
    expect((await readBody(stalled.res, '\0')).length).toBeLessThan(BIG.length) // ended before it had read it all
    await new Promise((resolve) => setTimeout(resolve, 300)) // more ticks: the reading one stays
    expect(hub.droppedCount).toBe(1)
    reading.res.destroy()
    expect((await reader).length).toBeGreaterThanOrEqual(BIG.length)
  })
})
