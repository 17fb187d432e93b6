import { DIALECTS, type Dialect } from '@flagsync/test-support/databases'
import { openSse, type SseReader } from '@flagsync/test-support/sse-reader'
import { startTestServer, type TestServer } from '@flagsync/test-support/test-server'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
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

// The receiver as `npm start` runs it: mounted at /sync of the flat API server.

const servers: TestServer[] = []
const readers: SseReader[] = []
afterEach(async () => {
  for (const r of readers.splice(0)) r.close()
  for (const s of servers.splice(0).reverse()) await s.dispose()
})

let dialect: Dialect = 'sqlite'
async function start(overrides: Parameters<typeof startTestServer>[0] = {}): Promise<TestServer> {
  const server = await startTestServer({ dialect, ...overrides })
  servers.push(server)
  return server
}
async function subscribe(server: TestServer, headers: Record<string, string> = {}): Promise<SseReader> {
  const reader = await openSse(`${server.url}/stream`, headers)
  readers.push(reader)
  expect(reader.status).toBe(200)
  return reader
}
const listFlags = async (server: TestServer) => withoutRevision(await (await server.request('/api/flags')).json())
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

describe.each(DIALECTS)('POST /sync on the flat API server, on %s', (current) => {
  beforeEach(() => {
    dialect = current
  })

  it('applies each action and streams UPSERT/DELETE with the revision as the SSE id', async () => {
    const server = await start()
    const stream = await subscribe(server)
    await stream.waitForCount(1) // connected; no flags yet

    const first = await postBatch(
      `${server.url}/sync`,
      batch([insert('a', { is_enabled: true }), insert('b', { is_enabled: false })]),
    )
    expect(first.status).toBe(200)
    expect(first.body.applied).toBe(2)
    const second = await postBatch(`${server.url}/sync`, batch([update('a', { rollout_percentage: 30 }), remove('b')]))
    expect(second.status).toBe(200)

    const live = (await stream.waitForCount(5, 2000)).slice(1)
    const log = await server.runtime.store.changesSince(0)
    expect(live.map((e) => e.event)).toEqual(['update', 'update', 'update', 'update'])
    expect(live.map((e) => Number(e.id))).toEqual(log.map((c) => c.revision))
    expect(live.map(dataOf)).toEqual(
      log.map((c) => (c.flag ? { type: 'UPSERT', flag: c.flag } : { type: 'DELETE', key: c.key })),
    )
    expect(live.map(dataOf).slice(2)).toEqual([
      { type: 'UPSERT', flag: fullFlag('a', { rollout_percentage: 30 }) },
      { type: 'DELETE', key: 'b' },
    ])
    expect(await listFlags(server)).toEqual([fullFlag('a', { rollout_percentage: 30 })])
  })

  it('a batch with one bad operation in the middle changes nothing and streams nothing', async () => {
    const server = await start()
    await postBatch(`${server.url}/sync`, batch([insert('keep', { is_enabled: true })]))
    const stream = await subscribe(server)
    await stream.waitForCount(2) // connected + keep
    const before = await listFlags(server)

    const rejected = await postBatch(
      `${server.url}/sync`,
      batch([
        insert('new', { is_enabled: true }),
        update('keep', { is_enabled: false }),
        update('missing', { is_enabled: true }),
        remove('keep'),
      ]),
    )
    expect(rejected.status).toBe(422)
    expect(rejected.body).toMatchObject({
      error: expect.any(String),
      operationIndex: 2,
      issues: [{ path: 'operations[2].recordId', message: expect.any(String) }],
    })
    expect(await listFlags(server)).toEqual(before)

    const good = await postBatch(`${server.url}/sync`, batch([insert('after', { is_enabled: true })]))
    expect(good.status).toBe(200)
    await stream.waitForCount(3, 2000)
    await sleep(300) // several poll intervals: anything else would have arrived by now
    expect(stream.events.slice(2).map(dataOf)).toEqual([{ type: 'UPSERT', flag: fullFlag('after') }])
  })

  it('twenty batches racing on one flag end as some serial order, one UPSERT each with increasing ids', async () => {
    const server = await start()
    await postBatch(`${server.url}/sync`, batch([insert('race', { is_enabled: true })]))
    const stream = await subscribe(server)
    await stream.waitForCount(2)

    const patches = racingPatches(20)
    const replies = await Promise.all(
      patches.map((changes) => postBatch(`${server.url}/sync`, batch([update('race', changes)]))),
    )
    expect(replies.map((r) => r.status)).toEqual(Array(20).fill(200))

    const events = (await stream.waitForCount(22, 3000)).slice(2)
    const final = expectSerialOrder(fullFlag('race'), patches, events)
    expect(await listFlags(server)).toEqual([final])
    expect(await server.runtime.store.get('race')).toEqual(final)
  })

  it('a replayed batchId is not applied twice, also after a restart on the same database file', async () => {
    const first = await start()
    const sent = batch([insert('a', { is_enabled: true })], 'replayed-batch')
    expect((await postBatch(`${first.url}/sync`, sent)).body).toEqual({
      batchId: 'replayed-batch',
      applied: 1,
      revision: 1,
    })
    await postBatch(`${first.url}/sync`, batch([update('a', { description: 'edited after' })]))
    expect((await postBatch(`${first.url}/sync`, sent)).body).toEqual({
      batchId: 'replayed-batch',
      applied: 0,
      duplicate: true,
    })
    await first.stop()

    const second = await start({ databaseUrl: first.databaseUrl })
    const stream = await subscribe(second)
    await stream.waitForCount(2)
    const replay = await postBatch(`${second.url}/sync`, sent)
    expect(replay.status).toBe(200)
    expect(replay.body).toEqual({ batchId: 'replayed-batch', applied: 0, duplicate: true })
    expect(await listFlags(second)).toEqual([fullFlag('a', { description: 'edited after' })])
    await sleep(300)
    expect(stream.events).toHaveLength(2)
  })

  it('requires the SDK key, or RECEIVER_TOKEN instead when that is set', async () => {
    const sdkOnly = await start({ sdkKey: 'sdk-key' })
    const body = batch([insert('a', { is_enabled: true })])
    expect((await postBatch(`${sdkOnly.url}/sync`, body)).status).toBe(401)
    expect((await postBatch(`${sdkOnly.url}/sync`, body, { Authorization: 'Bearer nope' })).status).toBe(401)
    expect((await postBatch(`${sdkOnly.url}/sync`, body, { Authorization: 'Bearer sdk-key' })).status).toBe(200)

    const separate = await start({ sdkKey: 'sdk-key', receiverToken: 'receiver-token' })
    const withSdk = await postBatch(`${separate.url}/sync`, body, { Authorization: 'Bearer sdk-key' })
    expect(withSdk.status).toBe(401)
    expect(withSdk.body.code).toBe('unauthorized')
    const withToken = await postBatch(`${separate.url}/sync`, body, { Authorization: 'Bearer receiver-token' })
    expect(withToken.status).toBe(200)
    // ...and the receiver token opens the receiver only, not the flag API.
    const api = await fetch(`${separate.url}/api/flags`, { headers: { Authorization: 'Bearer receiver-token' } })
    expect(api.status).toBe(401)
    const ok = await fetch(`${separate.url}/api/flags`, { headers: { Authorization: 'Bearer sdk-key' } })
    expect(withoutRevision(await ok.json())).toEqual([fullFlag('a')])
  })

  it('answers 400, 413, 415 and 405 as documented', async () => {
    const server = await start()
    expect((await postBatch(`${server.url}/sync`, '{"batchId":')).status).toBe(400)
    const tooMany = batch(Array.from({ length: 1001 }, (_, i) => insert(`f${i}`, { is_enabled: true })))
    const big = await postBatch(`${server.url}/sync`, tooMany)
    expect(big.status).toBe(413)
    expect(big.body.code).toBe('payload_too_large')
    const text = await postBatch(`${server.url}/sync`, 'hello', { 'Content-Type': 'text/plain' })
    expect(text.status).toBe(415)
    const get = await fetch(`${server.url}/sync`)
    expect(get.status).toBe(405)
    expect(await listFlags(server)).toEqual([])
  })

  it('allows CORS from the configured origins', async () => {
    const server = await start({ corsOrigins: ['https://app.example.com'] })
    const preflight = (origin: string) =>
      fetch(`${server.url}/sync`, {
        method: 'OPTIONS',
        headers: {
          Origin: origin,
          'Access-Control-Request-Method': 'POST',
          'Access-Control-Request-Headers': 'content-type,authorization',
        },
      })
    const allowed = await preflight('https://app.example.com')
    expect(allowed.status).toBe(204)
    expect(allowed.headers.get('access-control-allow-origin')).toBe('https://app.example.com')
    const denied = await preflight('https://other.example.com')
    expect(denied.headers.get('access-control-allow-origin')).toBeNull()
  })
})
