import { once } from 'node:events'
import { connect, type Socket } from 'node:net'
import { createGzip } from 'node:zlib'
import { afterEach, describe, expect, it } from 'vitest'
import { disposeTargets, flagService, flatApi, MIB, receiver, type Target } from './body-limit-targets.js'

/**
 * A body over the limit is answered 413 as soon as the limit is passed, not
 * once the client stops sending (body-parser reads the whole request first, so
 * a chunked body with no end never got an answer). The rest of the body is
 * then read and thrown away, 32 MiB at most, before the connection is closed
 * (lingering close; body-limit-linger.test.ts shows what that is for).
 */

afterEach(disposeTargets)

/** The client gives up here: far past every limit and what is drained after it. */
const GIVE_UP_AFTER = 96 * MIB
/** What server-kit's jsonBody reads and discards past the limit before it closes (its default drainBytes). */
const DRAIN = 32 * MIB
/** What a server may read past its bound: the chunk in flight and Node's read-ahead, not the client's stream. */
const SLACK = 2 * MIB

interface Outcome {
  head: string
  /** Body bytes the client had written when the answer's head arrived (undefined: never answered). */
  sentWhenAnswered: number | undefined
  /** Whether the server closed the connection (before the client gave up). */
  closed: boolean
  /** Bytes the server's socket read in all. */
  serverRead: number
}

/**
 * Opens a raw socket and streams a JSON array of spaces that never ends, in
 * 64 KiB writes, until the server closes the connection (or GIVE_UP_AFTER). Chunked unless
 * `contentLength` is given, which is then announced and never reached; with
 * `gzip`, the same endless JSON compressed (Content-Encoding: gzip).
 */
async function streamForever(target: Target, body: { contentLength?: number; gzip?: boolean } = {}): Promise<Outcome> {
  const { contentLength, gzip } = body
  const serverSockets: Socket[] = []
  const onConnection = (socket: Socket) => serverSockets.push(socket)
  target.server.on('connection', onConnection)
  const { hostname, port } = new URL(target.url)
  const socket = connect(Number(port), hostname)
  await once(socket, 'connect')
  target.server.off('connection', onConnection)

  let head = ''
  let sentWhenAnswered: number | undefined
  let sent = 0
  let closed = false
  let gaveUp = false
  socket.on('data', (data: Buffer) => {
    head += data.toString('latin1')
    if (sentWhenAnswered === undefined && head.includes('\r\n\r\n')) sentWhenAnswered = sent
  })
  const ended = new Promise<void>((resolve) => {
    socket.on('close', () => {
      closed = !gaveUp
      resolve()
    })
  })
  socket.on('error', () => {}) // a reset after the answer is the server closing on a client still sending

  const headers = {
    Host: `${hostname}:${port}`,
    'Content-Type': 'application/json',
    ...(contentLength === undefined ? { 'Transfer-Encoding': 'chunked' } : { 'Content-Length': String(contentLength) }),
    ...(gzip ? { 'Content-Encoding': 'gzip' } : {}),
    ...target.headers,
  }
  socket.write(
    `POST ${target.path} HTTP/1.1\r\n${Object.entries(headers)
      .map(([k, v]) => `${k}: ${v}\r\n`)
      .join('')}\r\n`,
  )
  const spaces = Buffer.alloc(64 * 1024, 0x20)
  const opening = Buffer.from(spaces)
  opening[0] = 0x5b // '[': valid JSON so far, and never finished
  const frame = (data: Buffer) =>
    contentLength === undefined
      ? Buffer.concat([Buffer.from(`${data.length.toString(16)}\r\n`), data, Buffer.from('\r\n')])
      : data
  const pieces = async function* () {
    if (gzip) {
      // A gzip stream that never ends: each MiB of whitespace is flushed as its own ~1 KiB of compressed bytes.
      const deflater = createGzip()
      const mib = Buffer.alloc(MIB, 0x20)
      mib[0] = 0x5b
      for (;;) {
        deflater.write(mib)
        mib[0] = 0x20
        await new Promise<void>((resolve) => deflater.flush(() => resolve()))
        const out: Buffer[] = []
        for (let part = deflater.read(); part !== null; part = deflater.read()) out.push(part as Buffer)
        yield Buffer.concat(out)
      }
    }
    yield opening
    for (;;) yield spaces
  }
  const wait = (ms: number) => new Promise((r) => setTimeout(r, ms))
  // Sends on after the answer, as a client that never stops would: only the server closing ends it.
  for await (const data of pieces()) {
    if (closed || socket.destroyed || sent >= GIVE_UP_AFTER) break
    sent += data.length
    if (!socket.write(frame(data))) await Promise.race([new Promise((r) => socket.once('drain', r)), ended, wait(50)])
    if (gzip) await wait(2)
  }
  // The server closes the connection after its answer; give it a moment, then stop either way.
  await Promise.race([ended, new Promise((r) => setTimeout(r, 5_000))])
  gaveUp = !closed
  socket.destroy()
  await ended
  const serverRead = serverSockets.reduce((sum, s) => sum + s.bytesRead, 0)
  return { head, sentWhenAnswered, closed, serverRead }
}

/** Answered 413 at the limit and closed once `drained` more bytes at most were read. */
function expectPromptRefusal(outcome: Outcome, limit: number, drained = 0): void {
  // Answered while the client was still sending, not after it gave up.
  expect(outcome.sentWhenAnswered).toBeDefined()
  expect(outcome.head).toMatch(/^HTTP\/1\.1 413 /)
  expect(outcome.head.toLowerCase()).toContain('connection: close')
  expect(outcome.head).toMatch(/"code":"payload_too_large"/)
  expect(outcome.closed).toBe(true)
  // The server read about as much as the limit (and the drain), not what the client kept sending.
  expect(outcome.serverRead).toBeLessThan(limit + drained + SLACK)
}

describe('an over-limit body is refused as soon as the limit is passed, and the connection closed', () => {
  const targets: Array<[string, () => Promise<Target>]> = [
    ['the flat API (/api/flags)', () => flatApi('/api/flags')],
    ['the flat API (/sync)', () => flatApi('/sync')],
    ['the standalone receiver (/sync)', receiver],
    ['the flag service', () => flagService()],
  ]
  it.each(targets)(
    '%s: a chunked body that never ends is answered at the limit and cut off after the drain',
    async (_name, start) => {
      const target = await start()
      const outcome = await streamForever(target)
      expectPromptRefusal(outcome, target.limit, DRAIN)
      expect(outcome.sentWhenAnswered).toBeGreaterThan(target.limit)
    },
  )

  it.each(targets)('%s: a Content-Length of 400 MiB is refused before the body is read', async (_name, start) => {
    const target = await start()
    const outcome = await streamForever(target, { contentLength: 400 * MIB })
    expectPromptRefusal(outcome, target.limit)
  })

  it.each(targets)('%s: a gzip body that inflates past the limit and never ends', async (_name, start) => {
    const target = await start()
    const outcome = await streamForever(target, { gzip: true })
    expectPromptRefusal(outcome, target.limit)
    // Refused on the inflated size: long before the compressed bytes themselves come near the limit.
    expect(outcome.sentWhenAnswered).toBeLessThan(target.limit / 4)
  })
})
