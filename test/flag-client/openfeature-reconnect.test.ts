/**
 * The OpenFeature provider with the real @openfeature/web-sdk: through a real
 * flat-API restart (same port, same SQLite file) its status goes READY →
 * STALE → READY, flags keep updating, and the flag client's status drops the
 * old error; variants are reported by name, errors with OpenFeature's codes.
 */
import { createFlagClient, type FlagClient, FlagsyncProvider, manualOnlineSource } from '@flagsync/flag-client'
import { startTestServer, type TestServer } from '@flagsync/test-support/test-server'
import { ErrorCode, OpenFeature, ProviderEvents, ProviderStatus } from '@openfeature/web-sdk'
import { IDBFactory, IDBKeyRange } from 'fake-indexeddb'
import { afterEach, describe, expect, it } from 'vitest'
import { type FrontServer, startFrontServer } from '../impressions/front-server.js'

const servers: TestServer[] = []
const fronts: FrontServer[] = []
const clients: FlagClient[] = []
afterEach(async () => {
  await OpenFeature.close()
  for (const c of clients.splice(0)) await c.close()
  for (const s of servers.splice(0)) await s.dispose()
  for (const s of fronts.splice(0)) await s.close()
})

function client(streamUrl: string): FlagClient {
  const c = createFlagClient({
    streamUrl,
    indexedDB: new IDBFactory(),
    IDBKeyRange,
    reconnect: { baseMs: 50, maxMs: 200, jitter: 0 },
  })
  clients.push(c)
  return c
}

describe('FlagsyncProvider with an SDK key the server refuses', () => {
  it('fails setProviderAndWait with PROVIDER_FATAL instead of waiting forever; evaluations answer their defaults', async () => {
    const server = await startTestServer({ sdkKey: 'sk_right' })
    servers.push(server)
    const flags = createFlagClient({
      streamUrl: `${server.url}/stream`,
      sdkKey: 'sk_wrong',
      indexedDB: new IDBFactory(),
      IDBKeyRange,
      reconnect: { baseMs: 50, maxMs: 200, jitter: 0 },
    })
    clients.push(flags)
    await expect(OpenFeature.setProviderAndWait(new FlagsyncProvider(flags))).rejects.toThrow(/refused the SDK key/)
    const of = OpenFeature.getClient()
    expect(of.providerStatus).toBe(ProviderStatus.FATAL)
    expect(of.getBooleanDetails('anything', true)).toMatchObject({ value: true, errorCode: ErrorCode.PROVIDER_FATAL })
    expect(flags.status().lastError).toMatchObject({ status: 401 })
  })
})

describe('FlagsyncProvider through a server restart', () => {
  it('goes STALE once while the stream is down and READY again when it is back, with the new flags', async () => {
    const server = await startTestServer()
    servers.push(server)
    const put = (s: TestServer, flag: Record<string, unknown>) =>
      s.request('/api/flags', { method: 'POST', body: flag })
    expect((await put(server, { key: 'checkout', is_enabled: false })).status).toBe(200)

    const flags = client(`${server.url}/stream`)
    await OpenFeature.setProviderAndWait(new FlagsyncProvider(flags))
    const of = OpenFeature.getClient()
    const events: string[] = []
    for (const type of [ProviderEvents.Ready, ProviderEvents.Stale, ProviderEvents.ConfigurationChanged]) {
      of.addHandler(type, () => events.push(type))
    }
    events.splice(0) // addHandler runs a READY handler at once for a provider that is already ready
    expect(of.providerStatus).toBe(ProviderStatus.READY)
    expect(of.getBooleanValue('checkout', true)).toBe(false)

    await server.stop()
    await expect.poll(() => of.providerStatus).toBe(ProviderStatus.STALE)
    // Several failed reconnects, one STALE.
    await expect.poll(() => flags.status().failures, { timeout: 5000 }).toBeGreaterThanOrEqual(3)
    expect(flags.status().lastError).not.toBeNull()
    expect(events).toEqual([ProviderEvents.Stale])

    const restarted = await startTestServer({ databaseUrl: server.databaseUrl, port: server.port })
    servers.push(restarted)
    expect((await put(restarted, { key: 'checkout', is_enabled: true })).status).toBe(200)
    await expect.poll(() => of.providerStatus, { timeout: 5000 }).toBe(ProviderStatus.READY)
    await expect.poll(() => of.getBooleanValue('checkout', false)).toBe(true)
    expect(flags.status()).toMatchObject({ state: 'live', failures: 0, lastError: null })
    expect(events[0]).toBe(ProviderEvents.Stale)
    expect(events).toContain(ProviderEvents.ConfigurationChanged)
    expect(events.indexOf(ProviderEvents.Ready)).toBeGreaterThan(0)
    expect(events.filter((e) => e === ProviderEvents.Stale)).toHaveLength(1)

    // A live update after that changes flags without touching the status.
    expect((await put(restarted, { key: 'checkout', is_enabled: false })).status).toBe(200)
    await expect.poll(() => of.getBooleanValue('checkout', true)).toBe(false)
    expect(of.providerStatus).toBe(ProviderStatus.READY)
    expect(events.filter((e) => e === ProviderEvents.Ready)).toHaveLength(1)
  })
})

describe('FlagsyncProvider details', () => {
  it('names the variant served (its value) instead of its index, and uses OpenFeature error codes', async () => {
    const front = await startFrontServer('http://127.0.0.1:9', {
      environmentId: '00000000-0000-4000-8000-000000000001',
      flags: [
        {
          key: 'banner',
          is_enabled: true,
          flag_type: 'string',
          default_value: 'none',
          disabled_value: 'none',
          variants: [
            { weight: 1, value: 'blue' },
            { weight: 1, value: 'green' },
          ],
        },
        {
          key: 'limits',
          is_enabled: true,
          flag_type: 'json',
          default_value: {},
          variants: [{ weight: 1, value: { max: 3 } }],
        },
      ],
    })
    fronts.push(front)
    await OpenFeature.setProviderAndWait(new FlagsyncProvider(client(`${front.url}/stream`)))
    const of = OpenFeature.getClient()
    const seen = new Set<string | undefined>()
    for (let i = 0; i < 40 && seen.size < 2; i++) {
      await OpenFeature.setContext({ targetingKey: `user-${i}` })
      const details = of.getStringDetails('banner', 'x')
      expect(details.reason).toBe('SPLIT')
      expect(details.variant).toBe(details.value)
      seen.add(details.variant)
    }
    expect(seen).toEqual(new Set(['blue', 'green']))
    // An object has no name to show: the index stays.
    expect(of.getObjectDetails('limits', {})).toMatchObject({ value: { max: 3 }, reason: 'SPLIT', variant: '0' })

    expect(of.getBooleanDetails('nope', true)).toMatchObject({ reason: 'ERROR', errorCode: ErrorCode.FLAG_NOT_FOUND })
    expect(of.getNumberDetails('banner', 1)).toMatchObject({ value: 1, errorCode: ErrorCode.TYPE_MISMATCH })
  })

  it('a client started offline from its cache: READY with the cached values, then STALE, never READY alone', async () => {
    const items = new Map<string, string>()
    const storage = {
      getItem: (k: string) => items.get(k) ?? null,
      setItem: (k: string, v: string) => void items.set(k, v),
      removeItem: (k: string) => void items.delete(k),
    }
    const STREAM = 'http://127.0.0.1:9/stream'
    const flag = { key: 'checkout', is_enabled: true, rollout_percentage: null, description: null, rules: [] }
    items.set('cached:flags', JSON.stringify({ id: STREAM, flags: [flag], environmentId: null, savedAt: 1 }))
    const offline = createFlagClient({
      streamUrl: STREAM,
      dbName: 'cached',
      indexedDB: new IDBFactory(),
      IDBKeyRange,
      localStorage: storage,
      online: manualOnlineSource(false),
    })
    clients.push(offline)
    expect(offline.status()).toMatchObject({ state: 'offline', source: 'cache' })

    const provider = new FlagsyncProvider(offline)
    const emitted: string[] = []
    for (const type of [ProviderEvents.Ready, ProviderEvents.Stale]) {
      provider.events.addHandler(type, () => emitted.push(type))
    }
    await OpenFeature.setProviderAndWait(provider)
    const of = OpenFeature.getClient()
    expect(of.getBooleanValue('checkout', false)).toBe(true)
    // The SDK's READY comes from initialize() resolving; the provider then says the stream is not there.
    await expect.poll(() => of.providerStatus).toBe(ProviderStatus.STALE)
    expect(emitted).toEqual([ProviderEvents.Stale])
    expect(of.getBooleanValue('checkout', false)).toBe(true)
  })
})
