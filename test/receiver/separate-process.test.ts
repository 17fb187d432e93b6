import { DIALECTS, type Dialect } from '@flagsync/test-support/databases'
import { openSse, type SseReader } from '@flagsync/test-support/sse-reader'
import { tempDir } from '@flagsync/test-support/temp-dir'
import { startTestServer, type TestServer } from '@flagsync/test-support/test-server'
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { buildReceiver, killAllReceivers, runReceiverExpectingExit, spawnReceiver } from './receiver-process.js'
import {
  batch,
  dataOf,
  expectSerialOrder,
  fullFlag,
  insert,
  postBatch,
  racingPatches,
  remove,
  update,
  withoutRevision,
} from './sync-helpers.js'

// The standalone `flagsync-receiver` CLI as its own process, sharing the
// SQLite file with a flag API server running in this process.

const servers: TestServer[] = []
const readers: SseReader[] = []

beforeAll(buildReceiver, 120_000)
afterEach(async () => {
  for (const r of readers.splice(0)) r.close()
  await killAllReceivers()
  for (const s of servers.splice(0).reverse()) await s.dispose()
})
afterAll(killAllReceivers)

let dialect: Dialect = 'sqlite'
async function startApi(overrides: Parameters<typeof startTestServer>[0] = {}): Promise<TestServer> {
  const server = await startTestServer({ sdkKey: 'sdk-key', dialect, ...overrides })
  servers.push(server)
  return server
}
async function subscribe(server: TestServer): Promise<SseReader> {
  const reader = await openSse(`${server.url}/stream`, { Authorization: 'Bearer sdk-key' })
  readers.push(reader)
  expect(reader.status).toBe(200)
  return reader
}
const auth = (token: string) => ({ Authorization: `Bearer ${token}` })
const listFlags = async (server: TestServer) => withoutRevision(await (await server.request('/api/flags')).json())
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

describe.each(DIALECTS)('flagsync-receiver in its own process, on %s', (current) => {
  beforeEach(() => {
    dialect = current
  })

  it("feeds the API process's stream through the change log, with the revision as the SSE id", async () => {
    const api = await startApi()
    const stream = await subscribe(api)
    await stream.waitForCount(1)
    const receiver = await spawnReceiver({ DATABASE_URL: api.databaseUrl, RECEIVER_TOKEN: 'receiver-token' })
    expect(receiver.receiverUrl).toBe(`${receiver.baseUrl}/sync`)
    const health = await fetch(`${receiver.baseUrl}/health`)
    expect(health.status).toBe(200)
    expect(await health.text()).toBe('OK')
    expect(receiver.messages().some((m) => m.includes('authentication is OFF'))).toBe(false)

    const first = await postBatch(
      receiver.receiverUrl,
      batch([insert('a', { is_enabled: true }), insert('b', { is_enabled: false }), update('a', { description: 'x' })]),
      auth('receiver-token'),
    )
    expect(first.status).toBe(200)
    expect(first.body.applied).toBe(3)
    const upserts = (await stream.waitForCount(3, 2000)).slice(1)

    const second = await postBatch(receiver.receiverUrl, batch([remove('b')]), auth('receiver-token'))
    expect(second.status).toBe(200)
    const deleted = (await stream.waitForCount(4, 2000))[3]

    const log = await api.runtime.store.changesSince(0)
    expect(log).toHaveLength(3)
    const live = [...upserts, deleted]
    expect(live.map((e) => Number(e?.id))).toEqual(log.map((c) => c.revision))
    expect(upserts.map(dataOf)).toEqual(
      expect.arrayContaining([
        { type: 'UPSERT', flag: fullFlag('a', { description: 'x' }) },
        { type: 'UPSERT', flag: fullFlag('b', { is_enabled: false }) },
      ]),
    )
    expect(deleted && dataOf(deleted)).toEqual({ type: 'DELETE', key: 'b' })
    expect(await listFlags(api)).toEqual([fullFlag('a', { description: 'x' })])

    // The receiver token is the receiver's: the SDK key does not open it when RECEIVER_TOKEN is set.
    expect((await postBatch(receiver.receiverUrl, batch([]), auth('sdk-key'))).status).toBe(401)
    expect((await postBatch(receiver.receiverUrl, batch([]))).status).toBe(401)
  })

  it('a rejected batch from the other process streams nothing', async () => {
    const api = await startApi()
    const receiver = await spawnReceiver({ DATABASE_URL: api.databaseUrl, SDK_KEY: 'sdk-key' })
    await postBatch(receiver.receiverUrl, batch([insert('keep', { is_enabled: true })]), auth('sdk-key'))
    await expect.poll(() => listFlags(api), { timeout: 2000 }).toEqual([fullFlag('keep')])
    const stream = await subscribe(api)
    await stream.waitForCount(2)

    const bad = await postBatch(
      receiver.receiverUrl,
      batch([update('keep', { is_enabled: false }), insert('x', { is_enabled: true, colour: 'red' }), remove('keep')]),
      auth('sdk-key'),
    )
    expect(bad.status).toBe(422)
    expect(bad.body).toMatchObject({ operationIndex: 1, issues: [{ path: 'operations[1].record.colour' }] })
    const good = await postBatch(receiver.receiverUrl, batch([insert('later', { is_enabled: false })]), auth('sdk-key'))
    expect(good.status).toBe(200)
    await stream.waitForCount(3, 2000)
    await sleep(300)
    expect(stream.events.slice(2).map(dataOf)).toEqual([
      { type: 'UPSERT', flag: fullFlag('later', { is_enabled: false }) },
    ])
    expect(await listFlags(api)).toEqual([fullFlag('keep'), fullFlag('later', { is_enabled: false })])
  })

  it('batches racing from both processes on one flag end as some serial order', async () => {
    const api = await startApi()
    const receiver = await spawnReceiver({ DATABASE_URL: api.databaseUrl, SDK_KEY: 'sdk-key' })
    await postBatch(`${api.url}/sync`, batch([insert('race', { is_enabled: true })]), auth('sdk-key'))
    const stream = await subscribe(api)
    await stream.waitForCount(2)

    const patches = racingPatches(20)
    const replies = await Promise.all(
      patches.map((changes, i) =>
        postBatch(
          i % 2 === 0 ? `${api.url}/sync` : receiver.receiverUrl,
          batch([update('race', changes)]),
          auth('sdk-key'),
        ),
      ),
    )
    expect(replies.map((r) => r.status)).toEqual(Array(20).fill(200))
    const events = (await stream.waitForCount(22, 3000)).slice(2)
    const final = expectSerialOrder(fullFlag('race'), patches, events)
    expect(await listFlags(api)).toEqual([final])
  })

  it('a batch applied by one process is a duplicate for the other and after the receiver restarts', async () => {
    const api = await startApi()
    const env = { DATABASE_URL: api.databaseUrl, SDK_KEY: 'sdk-key' }
    const receiver = await spawnReceiver(env)
    const sent = batch([insert('a', { is_enabled: true })], 'applied-once')
    expect((await postBatch(receiver.receiverUrl, sent, auth('sdk-key'))).body).toEqual({
      batchId: 'applied-once',
      applied: 1,
      revision: 1,
    })
    expect((await postBatch(`${api.url}/sync`, sent, auth('sdk-key'))).body).toEqual({
      batchId: 'applied-once',
      applied: 0,
      duplicate: true,
    })
    await postBatch(receiver.receiverUrl, batch([update('a', { description: 'later edit' })]), auth('sdk-key'))

    const started = Date.now()
    expect(await receiver.stop('SIGTERM')).toBe(0)
    expect(Date.now() - started).toBeLessThan(5000)

    const restarted = await spawnReceiver(env)
    const replay = await postBatch(restarted.receiverUrl, sent, auth('sdk-key'))
    expect(replay.body).toEqual({ batchId: 'applied-once', applied: 0, duplicate: true })
    await expect.poll(() => listFlags(api), { timeout: 2000 }).toEqual([fullFlag('a', { description: 'later edit' })])
    expect(await api.runtime.store.changesSince(0)).toHaveLength(2)
  })
})

describe('flagsync-receiver settings', () => {
  it('honours RECEIVER_PATH and CORS_ORIGINS, and warns loudly without a token', async () => {
    const dir = tempDir('flagsync-receiver-cli-')
    try {
      const receiver = await spawnReceiver({
        DATABASE_URL: `sqlite:${dir.file('flags.sqlite')}`,
        RECEIVER_PATH: '/hooks/flagsync',
        CORS_ORIGINS: 'https://app.example.com, https://admin.example.com',
      })
      expect(receiver.receiverUrl).toBe(`${receiver.baseUrl}/hooks/flagsync`)
      expect(receiver.messages().some((m) => /RECEIVER_TOKEN nor SDK_KEY.*authentication is OFF/.test(m))).toBe(true)
      const ok = await postBatch(receiver.receiverUrl, batch([insert('a', { is_enabled: true })]), {
        Origin: 'https://admin.example.com',
      })
      expect(ok.status).toBe(200)
      expect(ok.headers.get('access-control-allow-origin')).toBe('https://admin.example.com')
      expect((await postBatch(`${receiver.baseUrl}/sync`, batch([]))).status).toBe(404)
      expect(await receiver.stop('SIGINT')).toBe(0)
    } finally {
      await killAllReceivers()
      dir.remove()
    }
  })

  it.each([
    [{ PORT: 'eighty' }, /PORT must be an integer/],
    [{ PORT: '70000' }, /PORT must be an integer from 0 to 65535/],
    [{ BATCH_RETENTION_DAYS: '0' }, /BATCH_RETENTION_DAYS must be an integer from 1/],
    [{ BATCH_RETENTION_DAYS: '1.5' }, /BATCH_RETENTION_DAYS must be an integer/],
    [{ DATABASE_URL: 'mysql://localhost/flags' }, /DATABASE_URL must start with sqlite: or postgres:\/\//],
    [{ CORS_ORIGINS: 'app.example.com' }, /CORS_ORIGINS must be a comma-separated list of origins/],
    [{ RECEIVER_PATH: 'sync' }, /RECEIVER_PATH must be a URL path starting with \//],
  ])('exits 1 with a clear message for malformed settings: %j', async (env, message) => {
    const result = await runReceiverExpectingExit({ DATABASE_URL: 'sqlite::memory:', ...env })
    expect(result.code).toBe(1)
    expect(result.messages.join('\n')).toMatch(message)
    expect(result.messages.join('\n')).toContain('invalid configuration')
  })
})
