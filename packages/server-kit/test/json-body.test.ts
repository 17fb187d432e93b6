import { once } from 'node:events'
import { connect, type Socket } from 'node:net'
import { errorHandler, type JsonBodyOptions, jsonBody, listen, type RunningServer } from '@flagsync/server-kit'
import { fetchInChild } from '@flagsync/test-support/child-fetch'
import express from 'express'
import { afterEach, describe, expect, it } from 'vitest'

const KIB = 1024
const servers: RunningServer[] = []
afterEach(async () => {
  for (const server of servers.splice(0)) await server.close()
})

async function serve(options: JsonBodyOptions) {
  const app = express()
  app.post('/echo', ...jsonBody(options), (req, res) => {
    res.json({ got: Array.isArray(req.body) ? req.body.length : typeof req.body })
  })
  app.use(errorHandler())
  const server = await listen(app, { host: '127.0.0.1', port: 0 })
  servers.push(server)
  return `http://127.0.0.1:${server.port}`
}

/** A JSON array of `bytes` bytes. */
const jsonOf = (bytes: number) => Buffer.from(`[${' '.repeat(bytes - 2)}]`)

describe('jsonBody: a body over the limit', () => {
  it("reaches Node's fetch in another process as a 413 with its JSON body, every time, declared or chunked", async () => {
    const limit = 256 * KIB
    const url = await serve({ limit })
    // Closing on a client still sending resets the connection, and Node's fetch then sees EPIPE: the drain
    // keeps the connection open until the body has been read (see fetchInChild on why another process).
    const answers = await fetchInChild(`${url}/echo`, { bytes: 5 * limit, times: 10 })
    expect(answers).toHaveLength(20)
    for (const answer of answers) {
      expect(answer).toMatchObject({
        status: 413,
        body: { error: `request body is larger than ${limit} bytes`, code: 'payload_too_large', limit_bytes: limit },
      })
    }
    // The server is fine afterwards: a body within the limit, on a new connection, is parsed.
    const ok = await fetch(`${url}/echo`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', connection: 'close' },
      body: '[1,2,3]',
    })
    expect(ok.status).toBe(200)
    expect(await ok.json()).toEqual({ got: 3 })
  })

  it('is answered at once and drained for drainMs at most: a client that stalls past the limit is then closed', async () => {
    const limit = 4 * KIB
    const url = await serve({ limit, drainMs: 300 })
    const { port } = new URL(url)
    const socket = connect(Number(port), '127.0.0.1')
    await once(socket, 'connect')
    let answer = ''
    let answeredAfter: number | undefined
    socket.on('data', (data: Buffer) => {
      answer += data.toString('latin1')
      answeredAfter ??= Date.now() - started
    })
    socket.on('error', () => {})
    const closed = once(socket, 'close')
    const started = Date.now()
    // Announces twice the limit, sends a little over the limit, then never sends the rest.
    socket.write(
      `POST /echo HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${2 * limit}\r\n\r\n`,
    )
    socket.write(jsonOf(2 * limit).subarray(0, limit + 100))
    await closed
    const elapsed = Date.now() - started
    expect(answer).toMatch(/^HTTP\/1\.1 413 /)
    expect(answer.toLowerCase()).toContain('connection: close')
    expect(answer).toContain('"code":"payload_too_large"')
    expect(answeredAfter).toBeLessThan(250)
    expect(elapsed).toBeGreaterThanOrEqual(250)
    expect(elapsed).toBeLessThan(3000)
  })

  it('is not drained past drainBytes: a declared body far over it is answered before any of it is read', async () => {
    const limit = 4 * KIB
    const url = await serve({ limit, drainBytes: 16 * KIB })
    const { port } = new URL(url)
    const socket = connect(Number(port), '127.0.0.1')
    await once(socket, 'connect')
    let answer = ''
    socket.on('data', (data: Buffer) => {
      answer += data.toString('latin1')
    })
    socket.on('error', () => {})
    const closed = once(socket, 'close')
    socket.write(
      `POST /echo HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${limit + 17 * KIB}\r\n\r\n`,
    )
    await closed
    expect(answer).toMatch(/^HTTP\/1\.1 413 /)
  })

  it("with the default drain, a body 64 times the limit (16 MiB) still reaches Node's fetch as the 413", async () => {
    const limit = 256 * KIB
    const url = await serve({ limit })
    const answers = await fetchInChild(`${url}/echo`, { bytes: 64 * limit, times: 4 })
    expect(answers.map((answer) => ('status' in answer ? answer.status : answer.error))).toEqual(Array(8).fill(413))
  })

  it('is cut off once drainBytes past the limit have been read: a chunked body that never ends is not read forever', async () => {
    const limit = 64 * KIB
    const drainBytes = 256 * KIB
    const url = await serve({ limit, drainBytes })
    const serverSockets: Socket[] = []
    servers.at(-1)?.server.on('connection', (s: Socket) => serverSockets.push(s))
    const socket = connect(Number(new URL(url).port), '127.0.0.1')
    await once(socket, 'connect')
    let answer = ''
    socket.on('data', (data: Buffer) => {
      answer += data.toString('latin1')
    })
    socket.on('error', () => {})
    let closed = false
    const ended = new Promise<void>((resolve) =>
      socket.once('close', () => {
        closed = true
        resolve()
      }),
    )
    socket.write(
      'POST /echo HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n',
    )
    const piece = Buffer.alloc(16 * KIB, 0x20)
    piece[0] = 0x5b
    const chunk = Buffer.concat([Buffer.from(`${piece.length.toString(16)}\r\n`), piece, Buffer.from('\r\n')])
    // Keeps sending after the 413, up to 64 MiB, until the server closes.
    for (let sent = 0; !closed && !socket.destroyed && sent < 64 * 1024 * KIB; sent += piece.length) {
      piece[0] = 0x20
      if (!socket.write(chunk)) await Promise.race([new Promise((resolve) => socket.once('drain', resolve)), ended])
    }
    await Promise.race([ended, new Promise((resolve) => setTimeout(resolve, 5_000))])
    expect(closed).toBe(true)
    expect(answer).toMatch(/^HTTP\/1\.1 413 /)
    const read = serverSockets.reduce((sum, s) => sum + s.bytesRead, 0)
    expect(read).toBeGreaterThan(limit + drainBytes)
    expect(read).toBeLessThan(limit + drainBytes + 2 * 1024 * KIB)
    socket.destroy()
  })
})
