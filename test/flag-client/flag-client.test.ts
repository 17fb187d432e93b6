import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { evaluate } from '@flagsync/evaluation'
import { createFlagClient, type FlagClient, FlagsyncProvider, manualOnlineSource } from '@flagsync/flag-client'
import { startTestServer, type TestServer } from '@flagsync/test-support/test-server'
import { OpenFeature } from '@openfeature/web-sdk'
import { IDBFactory, IDBKeyRange } from 'fake-indexeddb'
import { afterEach, describe, expect, it } from 'vitest'

const servers: TestServer[] = []
const clients: FlagClient[] = []
const rawServers: Server[] = []
afterEach(async () => {
  for (const c of clients.splice(0)) await c.close()
  for (const s of servers.splice(0)) await s.dispose()
  for (const s of rawServers.splice(0)) await new Promise((r) => s.close(r))
})

async function start(overrides: Parameters<typeof startTestServer>[0] = {}) {
  const server = await startTestServer(overrides)
  servers.push(server)
  return server
}
function client(options: Partial<Parameters<typeof createFlagClient>[0]> & { streamUrl: string }) {
  const c = createFlagClient({
    indexedDB: new IDBFactory(),
    IDBKeyRange,
    reconnect: { baseMs: 50, maxMs: 200 },
    ...options,
  })
  clients.push(c)
  return c
}
const put = (server: TestServer, flag: Record<string, unknown>) =>
  server.request('/api/flags', { method: 'POST', body: flag })

describe('flag client against the real server', () => {
  it('bootstraps, then applies live UPSERT and DELETE', async () => {
    const server = await start()
    await put(server, { key: 'a', is_enabled: true })
    await put(server, { key: 'b', is_enabled: false })
    const flags = client({ streamUrl: `${server.url}/stream` })
    await flags.ready()
    expect(flags.allFlags().map((f) => f.key)).toEqual(['a', 'b'])
    expect(flags.status()).toMatchObject({ state: 'live', source: 'stream', environmentId: null })
    expect(flags.isEnabled('a')).toBe(true)

    await put(server, { key: 'c', is_enabled: true, rollout_percentage: 0 })
    await server.request('/api/flags/a', { method: 'DELETE' })
    await expect.poll(() => flags.allFlags().map((f) => f.key)).toEqual(['b', 'c'])
    expect(flags.isEnabled('c', { user_id: 'u1' })).toBe(false)
    expect(flags.getValue('missing', {}, 'fallback')).toBe('fallback')
  })

  it('sends the SDK key as a bearer header, or as sdk_key in the query', async () => {
    const server = await start({ sdkKey: 'secret-key' })
    await put(server, { key: 'a', is_enabled: true })
    const viaHeader = client({ streamUrl: `${server.url}/stream`, sdkKey: 'secret-key' })
    await viaHeader.ready()
    expect(viaHeader.getFlag('a')).toBeDefined()
    const wrong = client({ streamUrl: `${server.url}/stream`, sdkKey: 'nope' })
    await expect.poll(() => wrong.status().lastError?.status).toBe(401)
  })

  it('reconnects and rebuilds from scratch after the server is killed and restarted', async () => {
    const server = await start()
    await put(server, { key: 'old', is_enabled: true })
    const flags = client({ streamUrl: `${server.url}/stream` })
    await flags.ready()
    await server.stop()
    await expect.poll(() => flags.status().state).toBe('reconnecting')
    // While it is down, the data changes behind its back (another process on the same file).
    const restarted = await start({ databaseUrl: server.databaseUrl, port: server.port })
    await restarted.request('/api/flags/old', { method: 'DELETE' })
    await put(restarted, { key: 'new', is_enabled: true })
    await expect.poll(() => flags.allFlags().map((f) => f.key), { timeout: 5000 }).toEqual(['new'])
    expect(flags.status().state).toBe('live')
  })

  it('pauses while offline and reconnects at once when back online, whatever the backoff', async () => {
    const server = await start()
    await put(server, { key: 'a', is_enabled: true })
    const online = manualOnlineSource(true)
    const flags = client({ streamUrl: `${server.url}/stream`, online, reconnect: { baseMs: 60_000, maxMs: 60_000 } })
    await flags.ready()
    online.setOnline(false)
    await expect.poll(() => flags.status().state).toBe('offline')
    await put(server, { key: 'b', is_enabled: true })
    const started = Date.now()
    online.setOnline(true)
    await expect.poll(() => flags.getFlag('b'), { timeout: 5000 }).toBeDefined()
    expect(Date.now() - started).toBeLessThan(5000) // not the 60 s backoff
    expect(flags.status().state).toBe('live')
  })

  it('starts offline with the last-known flags from IndexedDB', async () => {
    const server = await start()
    await put(server, { key: 'remembered', is_enabled: true, description: 'from last time' })
    const indexedDB = new IDBFactory()
    const first = client({ streamUrl: `${server.url}/stream`, indexedDB })
    await first.ready()
    await first.close()
    clients.splice(clients.indexOf(first), 1)

    const offlineFetch = (() => Promise.reject(new TypeError('Failed to fetch'))) as typeof fetch
    const second = client({ streamUrl: `${server.url}/stream`, indexedDB, fetch: offlineFetch })
    await second.ready()
    expect(second.status().source).toBe('cache')
    expect(second.getFlag('remembered')).toMatchObject({ description: 'from last time' })
    expect(second.isEnabled('remembered')).toBe(true)
  })
})

describe('snapshot fallback', () => {
  it('polls the snapshot after 3 failed reconnects and stops when the stream is back', async () => {
    let streamUp = false
    let snapshotHits = 0
    const snapshot = [{ key: 'snap', is_enabled: true, env_only: 1 }]
    const fake = createServer((req, res) => {
      if (req.url?.startsWith('/flags/snapshot')) {
        snapshotHits++
        res.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify(snapshot))
      } else if (req.url?.startsWith('/stream') && streamUp) {
        res.writeHead(200, { 'Content-Type': 'text/event-stream' })
        res.write('event: connected\ndata: {"environment_id":"env-1"}\n\n')
        res.write('event: update\ndata: {"type":"UPSERT","env_id":"env-1","flag":{"key":"live","is_enabled":true}}\n\n')
        res.write('event: ready\ndata: "1"\n\n')
      } else {
        res.writeHead(503).end()
      }
    })
    rawServers.push(fake)
    await new Promise<void>((r) => fake.listen(0, '127.0.0.1', r))
    const base = `http://127.0.0.1:${(fake.address() as AddressInfo).port}`
    const flags = client({
      streamUrl: `${base}/stream`,
      snapshotUrl: `${base}/flags/snapshot`,
      snapshotIntervalMs: 50,
      persist: false,
    })
    await flags.ready()
    expect(flags.status()).toMatchObject({ state: 'polling', source: 'snapshot' })
    expect(flags.status().failures).toBeGreaterThanOrEqual(3)
    expect(flags.getFlag('snap')).toBeDefined()

    streamUp = true
    await expect.poll(() => flags.status().state, { timeout: 3000 }).toBe('live')
    expect(flags.status()).toMatchObject({ source: 'stream', environmentId: 'env-1' })
    expect(flags.allFlags().map((f) => f.key)).toEqual(['live'])
    const hits = snapshotHits
    await new Promise((r) => setTimeout(r, 200))
    expect(snapshotHits).toBe(hits) // polling stopped
  })
})

describe('OpenFeature provider', () => {
  it('returns the same values and reasons as the evaluator', async () => {
    const server = await start()
    const fixtures = [
      { key: 'off', is_enabled: false },
      { key: 'on', is_enabled: true },
      { key: 'targeted', is_enabled: true, rules: [{ attribute: 'country', operator: 'equals', values: ['NL'] }] },
      { key: 'half', is_enabled: true, rollout_percentage: 50 },
    ]
    for (const f of fixtures) await put(server, f)
    const flags = client({ streamUrl: `${server.url}/stream` })
    await OpenFeature.setProviderAndWait(new FlagsyncProvider(flags))
    const of = OpenFeature.getClient()
    for (const user of ['u1', 'u2', 'u3', 'u4', 'u5']) {
      for (const country of ['NL', 'DE']) {
        // The web SDK's context is static: set once, used by every evaluation.
        await OpenFeature.setContext({ targetingKey: user, country })
        for (const flag of fixtures) {
          const expected = evaluate(flags.getFlag(flag.key) as never, { user_id: user, country })
          const details = of.getBooleanDetails(flag.key, false)
          expect(details.value, `${flag.key}/${user}/${country}`).toBe(expected.value ?? false)
          expect(details.reason).toBe(expected.reason)
        }
      }
    }
    const missing = of.getBooleanDetails('nope', true)
    expect(missing).toMatchObject({ value: true, reason: 'ERROR', errorCode: 'FLAG_NOT_FOUND' })
    const mismatch = of.getStringDetails('on', 'x')
    expect(mismatch).toMatchObject({ value: 'x', reason: 'ERROR', errorCode: 'TYPE_MISMATCH' })
    await OpenFeature.close()
  })
})
