import { afterEach, describe, expect, it } from 'vitest'
import { type SpawnedServer, spawnServer } from '../support/spawn-server.js'
import { openSse } from '../support/sse-reader.js'
import { tempDir } from '../support/temp-dir.js'

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
})
