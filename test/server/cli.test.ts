import { spawn } from 'node:child_process'
import { createServer, connect as netConnect } from 'node:net'
import { fileURLToPath } from 'node:url'
import { type SpawnedServer, spawnServer } from '@flagsync/test-support/spawn-server'
import { openSse } from '@flagsync/test-support/sse-reader'
import { tempDir } from '@flagsync/test-support/temp-dir'
import { afterEach, describe, expect, it } from 'vitest'

const children: SpawnedServer[] = []
const dirs: Array<{ remove(): void }> = []
afterEach(() => {
  for (const c of children.splice(0)) c.kill()
  for (const d of dirs.splice(0)) d.remove()
})

describe('the server CLI (npm start)', () => {
  it('logs its address, warns without SDK_KEY, and exits within 5 s of SIGTERM with a stream open', async () => {
    const dir = tempDir()
    dirs.push(dir)
    const server = await spawnServer('packages/flat-api/dist/cli.js', {
      DATABASE_URL: `sqlite:${dir.file('f.sqlite')}`,
    })
    children.push(server)
    expect(server.output()).toMatch(/SDK_KEY is not set/)
    expect(server.output()).toMatch(/listening on http:\/\/127\.0\.0\.1:\d+/)
    const stream = await openSse(`${server.url}/stream`)
    await stream.waitForCount(1)
    const started = Date.now()
    server.kill('SIGTERM')
    expect(await server.exited).toBe(0)
    expect(Date.now() - started).toBeLessThan(5000)
    await stream.ended
  })

  it('refuses a malformed setting by name', async () => {
    await expect(spawnServer('packages/flat-api/dist/cli.js', { PORT: 'eighty' }, 5000)).rejects.toThrow(
      /PORT must be an integer/,
    )
  })

  it('accepts the sqlite:/absolute/path form and keeps data there', async () => {
    const dir = tempDir()
    dirs.push(dir)
    const env = { DATABASE_URL: `sqlite:${dir.file('abs.sqlite')}`, SDK_KEY: 'k' }
    const first = await spawnServer('packages/flat-api/dist/cli.js', env)
    children.push(first)
    const res = await fetch(`${first.url}/api/flags`, {
      method: 'POST',
      headers: { Authorization: 'Bearer k', 'Content-Type': 'application/json' },
      body: JSON.stringify({ key: 'kept', is_enabled: true }),
    })
    expect(res.status).toBe(200)
    first.kill('SIGTERM')
    await first.exited
    const second = await spawnServer('packages/flat-api/dist/cli.js', env)
    children.push(second)
    const list = await fetch(`${second.url}/api/flags`, { headers: { Authorization: 'Bearer k' } })
    expect((await list.json()).map((f: { key: string }) => f.key)).toEqual(['kept'])
  })

  it('binds its port before loading the app: a stream client connecting during startup is held, then bootstrapped', async () => {
    const dir = tempDir()
    dirs.push(dir)
    const port = await new Promise<number>((resolve) => {
      const probe = createServer().listen(0, '127.0.0.1', () => {
        const { port } = probe.address() as { port: number }
        probe.close(() => resolve(port))
      })
    })
    const child = spawn(
      process.execPath,
      [fileURLToPath(new URL('../../packages/flat-api/dist/cli.js', import.meta.url))],
      {
        env: {
          ...process.env,
          HOST: '127.0.0.1',
          PORT: String(port),
          LOG_LEVEL: 'info',
          DATABASE_URL: `sqlite:${dir.file('f.sqlite')}`,
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    )
    let out = ''
    let readyAt = Number.POSITIVE_INFINITY
    const onOutput = (d: Buffer) => {
      out += d
      if (readyAt === Number.POSITIVE_INFINITY && /listening on/.test(out)) readyAt = Date.now()
    }
    child.stdout?.on('data', onOutput)
    child.stderr?.on('data', onOutput)
    try {
      // Retry refused connections until the port is bound; note whether the app had said it was ready.
      const { socket, readyAtConnect } = await new Promise<{
        socket: ReturnType<typeof netConnect>
        readyAtConnect: boolean
      }>((resolve, reject) => {
        const deadline = Date.now() + 15_000
        const attempt = () => {
          const socket = netConnect({ host: '127.0.0.1', port })
          socket.once('connect', () => resolve({ socket, readyAtConnect: /listening on/.test(out) }))
          socket.once('error', () => {
            if (Date.now() > deadline) reject(new Error(`never bound:\n${out}`))
            else setTimeout(attempt, 5)
          })
        }
        attempt()
      })
      expect(readyAtConnect).toBe(false)
      const connectedAt = Date.now()
      let text = ''
      socket.on('data', (chunk) => {
        text += chunk
      })
      socket.write(`GET /stream HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nAccept: text/event-stream\r\n\r\n`)
      await expect.poll(() => text, { timeout: 15_000 }).toContain(': bootstrap complete')
      expect(text).toMatch(/^HTTP\/1\.1 200 OK/)
      expect(text).toContain('event: connected')
      await expect.poll(() => out, { timeout: 15_000 }).toMatch(/listening on/)
      // Bound before Express, knex and the store were loaded (most of a second even on an idle machine), not at the
      // end of startup, where the log line follows the bind within milliseconds.
      expect(readyAt - connectedAt).toBeGreaterThan(100)
      socket.destroy()
    } finally {
      child.kill('SIGKILL')
    }
  })
})
