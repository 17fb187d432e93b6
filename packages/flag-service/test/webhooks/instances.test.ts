import { silentLogger } from '@flagsync/server-kit'
import { createTestDatabase, DIALECTS, type Dialect, type TestDatabase } from '@flagsync/test-support/databases'
import { type SpawnedServer, spawnServer } from '@flagsync/test-support/spawn-server'
import { afterEach, describe, expect, it } from 'vitest'
import { type FlagServiceServer, loadServiceConfig, startFlagServiceServer } from '../../src/index.js'
import { WEBHOOK_TABLES } from '../../src/webhooks/index.js'
import { eventually, type Receiver, startReceiver } from './support.js'

const CLI = 'packages/flag-service/dist/cli.js'
const SETUP = { ADMIN_EMAIL: 'admin@example.com', ADMIN_PASSWORD: 'correct horse battery', WORKSPACE_NAME: 'Acme' }
const WEBHOOK_ENV = { WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true', WEBHOOK_POLL_MS: '20', WEBHOOK_CONCURRENCY: '8' }

/** JSON calls with the setup's server key (admin-equivalent in the Default project). */
const caller =
  (key: string) =>
  async (url: string, path: string, method = 'GET', body?: unknown) => {
    const res = await fetch(`${url}${path}`, {
      method,
      headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    })
    const text = await res.text()
    return { status: res.status, body: text ? JSON.parse(text) : undefined }
  }

/** Sets the database up in this process: the workspace, the Default project, its key and production environment. */
async function setUp(url: string) {
  const server = await startFlagServiceServer(
    loadServiceConfig({ PORT: '0', DATABASE_URL: url, ...SETUP }),
    silentLogger(),
  )
  const { setup } = server
  await server.close()
  if (setup.status !== 'created') throw new Error('the database was set up already')
  return { projectId: setup.projectId, call: caller(setup.sdkKey) }
}

const instance = (url: string, env: Record<string, string> = {}): Promise<FlagServiceServer> =>
  startFlagServiceServer(loadServiceConfig({ PORT: '0', DATABASE_URL: url, ...WEBHOOK_ENV, ...env }), silentLogger())

/** Counts what the receiver got by webhook-id. */
const countsById = (receiver: Receiver) => {
  const counts = new Map<string, number>()
  for (const r of receiver.received) counts.set(r.id, (counts.get(r.id) ?? 0) + 1)
  return counts
}

describe.each(DIALECTS)('two instances on one %s database', (dialect: Dialect) => {
  const cleanup: Array<() => Promise<unknown> | unknown> = []
  afterEach(async () => {
    for (const fn of cleanup.splice(0).reverse()) await fn()
  })

  it('deliver every event exactly once, and every delivery is signed', async () => {
    const db: TestDatabase = await createTestDatabase(dialect)
    cleanup.push(() => db.drop())
    const { projectId, call } = await setUp(db.url)
    const receiver = await startReceiver()
    cleanup.push(() => receiver.close())
    // Answers take a little while, so both workers have deliveries in flight at once.
    receiver.answer = () => ({ status: 200, delayMs: 5 })
    const a = await instance(db.url)
    cleanup.push(() => a.close())
    const b = await instance(db.url)
    cleanup.push(() => b.close())
    const hook = await call(a.url, `/api/projects/${projectId}/webhooks`, 'POST', { url: receiver.url, events: ['*'] })
    receiver.secret = hook.body.secret
    const envs = await call(a.url, `/api/projects/${projectId}/environments`)
    const env = envs.body[0].id as string

    const N = 120
    await Promise.all(
      Array.from({ length: N }, (_, i) =>
        call(i % 2 === 0 ? a.url : b.url, `/api/environments/${env}/flags`, 'POST', { key: `f${i}`, is_enabled: true }),
      ),
    )
    const rows = await eventually(async () => {
      const all = await a.runtime.knex(WEBHOOK_TABLES.deliveries).where('webhook_id', hook.body.id)
      expect(all).toHaveLength(N)
      expect(all.filter((d) => d.status !== 'delivered')).toEqual([])
      return all
    }, 30_000)
    // Nothing arrives late: leases are long and no instance crashed.
    await new Promise((r) => setTimeout(r, 300))
    const counts = countsById(receiver)
    expect(counts.size).toBe(N)
    expect([...counts.values()].filter((n) => n !== 1)).toEqual([])
    expect(new Set(counts.keys())).toEqual(new Set(rows.map((d) => d.id)))
    expect(rows.every((d) => Number(d.attempts) === 1)).toBe(true)
    expect(receiver.received.filter((r) => r.verifyError !== null)).toEqual([])
  }, 60_000)
})

describe('an instance killed with kill -9 on PostgreSQL', () => {
  const cleanup: Array<() => Promise<unknown> | unknown> = []
  afterEach(async () => {
    for (const fn of cleanup.splice(0).reverse()) await fn()
  })

  it('loses no event: the other instance delivers what it had claimed once its lease runs out', async () => {
    const db = await createTestDatabase('postgres')
    cleanup.push(() => db.drop())
    const { projectId, call } = await setUp(db.url)
    const receiver = await startReceiver()
    cleanup.push(() => receiver.close())
    receiver.answer = () => ({ status: 200, delayMs: 100 })
    // The lease is 3 × the timeout: 1.5 s.
    const env = { DATABASE_URL: db.url, DASHBOARD_DIR: 'off', ...WEBHOOK_ENV, WEBHOOK_TIMEOUT_MS: '500' }
    const spawned: SpawnedServer[] = []
    for (let i = 0; i < 2; i++) {
      const child = await spawnServer(CLI, env, 30_000)
      spawned.push(child)
      cleanup.push(() => {
        child.kill()
        return child.exited
      })
    }
    const [victim, survivor] = spawned as [SpawnedServer, SpawnedServer]
    const hook = await call(survivor.url, `/api/projects/${projectId}/webhooks`, 'POST', {
      url: receiver.url,
      events: ['flag.created'],
    })
    receiver.secret = hook.body.secret
    const envs = await call(survivor.url, `/api/projects/${projectId}/environments`)
    const environment = envs.body[0].id as string

    const N = 60
    for (let i = 0; i < N; i++) {
      const res = await call(victim.url, `/api/environments/${environment}/flags`, 'POST', {
        key: `k${i}`,
        is_enabled: true,
      })
      expect(res.status).toBe(200)
    }
    // Killed while its worker has deliveries claimed and in flight.
    await receiver.waitFor(5)
    victim.kill('SIGKILL')
    await victim.exited

    const pgKnex = (await import('knex')).default({ client: 'pg', connection: db.url })
    cleanup.push(() => pgKnex.destroy())
    const rows = await eventually(async () => {
      const all = await pgKnex(WEBHOOK_TABLES.deliveries).where('webhook_id', hook.body.id)
      expect(all).toHaveLength(N)
      expect(all.filter((d) => d.status !== 'delivered')).toEqual([])
      return all
    }, 30_000)
    const counts = countsById(receiver)
    expect(new Set(counts.keys())).toEqual(new Set(rows.map((d) => d.id)))
    expect(receiver.received.filter((r) => r.verifyError !== null)).toEqual([])
    const keys = new Set(receiver.received.map((r) => r.body.data.flag_key as string))
    expect(keys.size).toBe(N)
  }, 90_000)
})
