import { execFile } from 'node:child_process'
import { once } from 'node:events'
import { connect } from 'node:net'
import { promisify } from 'node:util'
import { errorHandler, type JsonBodyOptions, jsonBody, listen, type RunningServer } from '@flagsync/server-kit'
import express from 'express'
import { afterEach, describe, expect, it } from 'vitest'

const run = promisify(execFile)

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

/**
 * POSTs a JSON array of `bytes` bytes `times` times with Content-Length, then as many times chunked (a
 * ReadableStream body), from a separate Node process's fetch; each answer, or the error's cause code.
 */
async function fetchInChild(url: string, bytes: number, times: number): Promise<unknown[]> {
  const script = `
    const [url, bytes, times] = [process.argv[1], Number(process.argv[2]), Number(process.argv[3])]
    const body = Buffer.from('[' + ' '.repeat(bytes - 2) + ']')
    const chunked = () => new ReadableStream({
      start(controller) {
        for (let at = 0; at < body.length; at += 16384) controller.enqueue(body.subarray(at, at + 16384))
        controller.close()
      },
    })
    const out = []
    for (const kind of ['declared', 'chunked']) {
      for (let i = 0; i < times; i++) {
        try {
          const res = await fetch(url, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: kind === 'declared' ? body : chunked(),
            duplex: 'half',
          })
          out.push({ status: res.status, body: await res.json() })
        } catch (error) {
          out.push({ kind, error: String(error.cause?.code ?? error) })
        }
      }
    }
    console.log(JSON.stringify(out))
  `
  const { stdout } = await run(process.execPath, [
    '--input-type=module',
    '-e',
    script,
    `${url}/echo`,
    String(bytes),
    String(times),
  ])
  return JSON.parse(stdout) as unknown[]
}

describe('jsonBody: a body over the limit', () => {
  it("reaches Node's fetch in another process as a 413 with its JSON body, every time, declared or chunked", async () => {
    const limit = 256 * KIB
    const url = await serve({ limit })
    // Before the drain, most of these failed with EPIPE (the server closed on a client still sending). The
    // client runs in its own process: sharing the server's event loop, it never raced the close.
    const answers = await fetchInChild(url, 5 * limit, 10)
    expect(answers).toHaveLength(20)
    for (const answer of answers) {
      expect(answer).toEqual({
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
})
