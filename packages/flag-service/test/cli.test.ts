import { execFileSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { createTestDatabase, type TestDatabase } from '@flagsync/test-support/databases'
import { type SpawnedServer, spawnServer } from '@flagsync/test-support/spawn-server'
import { tempDir } from '@flagsync/test-support/temp-dir'
import { afterEach, beforeAll, describe, expect, it } from 'vitest'

const CLI = 'packages/flag-service/dist/cli.js'
const root = fileURLToPath(new URL('../../..', import.meta.url))
const SETUP = { ADMIN_EMAIL: 'ops@example.com', ADMIN_PASSWORD: 'ops password 1', WORKSPACE_NAME: 'Ops' }

const children: SpawnedServer[] = []
const cleanups: Array<() => unknown> = []
afterEach(async () => {
  for (const c of children.splice(0)) c.kill()
  for (const fn of cleanups.splice(0)) await fn()
})

function sqliteUrl(): string {
  const dir = tempDir('flagsync-service-cli-')
  cleanups.push(() => dir.remove())
  return `sqlite:${dir.file('service.sqlite')}`
}

async function login(url: string, email: string, password: string): Promise<Response> {
  return fetch(`${url}/api/auth/login`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ email, password }),
  })
}

describe('the flag service CLI (npm run service)', () => {
  beforeAll(() => {
    // The CLI runs the compiled files: build this package (and what it references) when stale.
    execFileSync(process.execPath, [`${root}node_modules/typescript/bin/tsc`, '-b', 'packages/flag-service'], {
      cwd: root,
      stdio: 'pipe',
    })
  }, 120_000)

  it('sets up the workspace, logs its address and the first SDK key once, serves /health, and exits within 5 s of SIGTERM', async () => {
    const server = await spawnServer(CLI, { DATABASE_URL: sqliteUrl(), ...SETUP })
    children.push(server)
    expect(server.output()).toMatch(/flagsync service listening on http:\/\/127\.0\.0\.1:\d+/)
    const key = /Production SDK key, shown only now: (sk_live_[A-Za-z0-9_-]{43})/.exec(server.output())?.[1]
    expect(key).toBeDefined()

    const health = await fetch(`${server.url}/health`)
    expect(health.status).toBe(200)
    expect(await health.text()).toBe('OK')
    expect((await login(server.url, SETUP.ADMIN_EMAIL, SETUP.ADMIN_PASSWORD)).status).toBe(200)
    const projects = await fetch(`${server.url}/api/projects`, { headers: { Authorization: `Bearer ${key}` } })
    expect((await projects.json()).map((p: { name: string }) => p.name)).toEqual(['Default'])
    // The password is never logged.
    expect(server.output()).not.toContain(SETUP.ADMIN_PASSWORD)

    const started = Date.now()
    server.kill('SIGTERM')
    expect(await server.exited).toBe(0)
    expect(Date.now() - started).toBeLessThan(5000)
  })

  it('without the setup variables keeps serving and says which variables to set', async () => {
    const server = await spawnServer(CLI, { DATABASE_URL: sqliteUrl() })
    children.push(server)
    expect(server.output()).toMatch(/the workspace is not set up.*ADMIN_EMAIL, ADMIN_PASSWORD, WORKSPACE_NAME/)
    const ws = await fetch(`${server.url}/api/auth/workspace`)
    expect(await ws.json()).toEqual({ workspace_name: '', is_setup_complete: false })
    expect((await fetch(`${server.url}/health`)).status).toBe(200)
  })

  it('keeps its data across a restart and ignores the setup variables then', async () => {
    const env = { DATABASE_URL: sqliteUrl(), ...SETUP }
    const first = await spawnServer(CLI, env)
    children.push(first)
    first.kill('SIGTERM')
    await first.exited
    const second = await spawnServer(CLI, { ...env, ADMIN_PASSWORD: 'a different one' })
    children.push(second)
    expect(second.output()).toMatch(/workspace \\"Ops\\" is set up/) // JSON log line: quotes escaped
    expect(second.output()).not.toMatch(/sk_live_/)
    expect((await login(second.url, SETUP.ADMIN_EMAIL, SETUP.ADMIN_PASSWORD)).status).toBe(200)
  })

  it('runs on PostgreSQL', async () => {
    const db: TestDatabase = await createTestDatabase('postgres')
    cleanups.push(() => db.drop())
    const server = await spawnServer(CLI, { DATABASE_URL: db.url, ...SETUP })
    children.push(server)
    expect(server.output()).toMatch(/\(database postgres\)/)
    expect((await login(server.url, SETUP.ADMIN_EMAIL, SETUP.ADMIN_PASSWORD)).status).toBe(200)
    server.kill('SIGTERM')
    expect(await server.exited).toBe(0)
  })

  it.each([
    [{ PORT: 'eighty' }, /PORT must be an integer from 0 to 65535/],
    [{ ADMIN_EMAIL: 'ops@example.com' }, /ADMIN_EMAIL set but ADMIN_PASSWORD, WORKSPACE_NAME missing/],
    [{ ...SETUP, ADMIN_PASSWORD: 'short' }, /ADMIN_PASSWORD must be at least 8 characters/],
    [{ DATABASE_URL: 'mysql://db/flags' }, /DATABASE_URL must start with sqlite: or postgres:\/\//],
    [{ DASHBOARD_DIR: '/nonexistent' }, /DASHBOARD_DIR must be a built dashboard.*\/nonexistent/],
  ])('refuses %j with a clear message and exit code 1', async (env, message) => {
    const attempt = spawnServer(CLI, { DATABASE_URL: sqliteUrl(), ...env }, 10_000)
    await expect(attempt).rejects.toThrow(/process exited \(1\) before listening/)
    await expect(attempt).rejects.toThrow(message)
  })
})
