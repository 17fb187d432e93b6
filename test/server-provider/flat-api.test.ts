/**
 * @flagsync/server-provider with the real @openfeature/server-sdk against a real flat API (SQLite, SDK_KEY set):
 * answers match `evaluate`, no request per evaluation, REST changes arrive, a wrong key is FATAL, and through a
 * restart on the same port and database the provider goes STALE (still answering) and READY with what it missed,
 * resuming with Last-Event-ID.
 */
import { evaluate } from '@flagsync/evaluation'
import type { EvaluableFlag } from '@flagsync/protocol'
import { FlagsyncServerProvider } from '@flagsync/server-provider'
import { startTestServer, type TestServer } from '@flagsync/test-support/test-server'
import { ErrorCode, OpenFeature, ProviderEvents, ProviderStatus } from '@openfeature/server-sdk'
import { afterEach, describe, expect, it } from 'vitest'

const KEY = 'sk_server_key'
const servers: TestServer[] = []
afterEach(async () => {
  await OpenFeature.close()
  for (const s of servers.splice(0).reverse()) await s.dispose()
})

async function start(overrides: Parameters<typeof startTestServer>[0] = {}): Promise<TestServer> {
  const server = await startTestServer({ sdkKey: KEY, streamRetryMs: 20, ...overrides })
  servers.push(server)
  return server
}

/** Every request the server receives, with its Last-Event-ID. */
function countRequests(server: TestServer): Array<{ url: string; lastEventId: string | undefined }> {
  const seen: Array<{ url: string; lastEventId: string | undefined }> = []
  server.server.prependListener('request', (req) => {
    const header = req.headers['last-event-id']
    seen.push({ url: req.url ?? '', lastEventId: typeof header === 'string' ? header : undefined })
  })
  return seen
}

async function put(server: TestServer, flag: Record<string, unknown>): Promise<void> {
  const res = await server.request('/api/flags', { method: 'POST', body: flag })
  expect(res.status, await res.clone().text()).toBe(200)
}

async function flagOf(server: TestServer, key: string): Promise<EvaluableFlag> {
  return (await (await server.request(`/api/flags/${key}`)).json()) as EvaluableFlag
}

const provider = (server: TestServer, sdkKey = KEY) =>
  new FlagsyncServerProvider({
    streamUrl: `${server.url}/stream`,
    sdkKey,
    reconnect: { baseMs: 20, maxMs: 100, jitter: 0 },
  })

describe('FlagsyncServerProvider against the flat API', () => {
  it('answers every evaluation from memory as evaluate does, and follows a REST PATCH', async () => {
    const server = await start()
    await put(server, { key: 'checkout', is_enabled: true, rollout_percentage: 50 })
    await put(server, {
      key: 'beta',
      is_enabled: true,
      rollout_percentage: 0,
      rules: [{ attribute: 'country', operator: 'equals', values: ['NL'] }],
    })
    await put(server, { key: 'off', is_enabled: false })
    await OpenFeature.setProviderAndWait(provider(server))
    const of = OpenFeature.getClient()
    const changed: string[][] = []
    of.addHandler(ProviderEvents.ConfigurationChanged, (e) => changed.push(e?.flagsChanged ?? []))

    const requests = countRequests(server)
    const flags = new Map<string, EvaluableFlag>()
    for (const key of ['checkout', 'beta', 'off']) flags.set(key, await flagOf(server, key))
    requests.splice(0)
    const reasons = new Set<string>()
    for (let i = 0; i < 100; i++) {
      const context = { targetingKey: `user-${i}`, country: i % 3 === 0 ? 'NL' : 'DE' }
      for (const [key, flag] of flags) {
        const expected = evaluate(flag, { user_id: context.targetingKey, country: context.country })
        const details = await of.getBooleanDetails(key, !expected.value, context)
        expect(details, `${key} ${i}`).toMatchObject({ value: expected.value, reason: expected.reason })
        reasons.add(details.reason ?? '')
      }
    }
    expect([...reasons].sort()).toEqual(['DISABLED', 'SPLIT', 'TARGETING_MATCH'])
    expect(requests).toEqual([])

    expect(await of.getBooleanDetails('missing', true)).toMatchObject({
      value: true,
      reason: 'ERROR',
      errorCode: ErrorCode.FLAG_NOT_FOUND,
    })
    expect(await of.getStringDetails('off', 'text')).toMatchObject({
      value: 'text',
      errorCode: ErrorCode.TYPE_MISMATCH,
    })
    expect(await of.getBooleanDetails('checkout', true, {})).toMatchObject({
      value: true,
      errorCode: ErrorCode.TARGETING_KEY_MISSING,
    })

    const res = await server.request('/api/flags/off', { method: 'PATCH', body: { is_enabled: true } })
    expect(res.status).toBe(200)
    await expect.poll(() => of.getBooleanValue('off', false, { targetingKey: 'u' })).toBe(true)
    expect(changed).toEqual([['off']])
    expect(requests.map((r) => r.url)).toEqual(['/api/flags/off'])
  })

  it('fails setProviderAndWait with PROVIDER_FATAL for a key the server refuses; evaluations answer defaults', async () => {
    const server = await start()
    await put(server, { key: 'checkout', is_enabled: true })
    const requests = countRequests(server)
    await expect(OpenFeature.setProviderAndWait(provider(server, 'sk_wrong'))).rejects.toThrow(/refused the SDK key/)
    const of = OpenFeature.getClient()
    expect(of.providerStatus).toBe(ProviderStatus.FATAL)
    expect(await of.getBooleanDetails('checkout', false)).toMatchObject({
      value: false,
      errorCode: ErrorCode.PROVIDER_FATAL,
    })
    // A refused key is configuration: the provider does not keep knocking.
    await new Promise((resolve) => setTimeout(resolve, 300))
    expect(requests.map((r) => r.url)).toEqual(['/stream'])
  })

  it('connects again when initialized again after onClose', async () => {
    const server = await start()
    await put(server, { key: 'checkout', is_enabled: false })
    const requests = countRequests(server)
    const reused = provider(server)
    await reused.initialize()
    await reused.onClose()
    await put(server, { key: 'checkout', is_enabled: true })
    expect(await reused.resolveBooleanEvaluation('checkout', true, { targetingKey: 'u' })).toMatchObject({
      value: false,
    })
    await reused.initialize()
    expect(await reused.resolveBooleanEvaluation('checkout', false, { targetingKey: 'u' })).toMatchObject({
      value: true,
    })
    expect(requests.filter((r) => r.url === '/stream')).toHaveLength(2)
    await reused.onClose()
  })

  it('goes STALE while the server is down (values still answer) and READY with the changes it missed', async () => {
    const server = await start()
    await put(server, { key: 'checkout', is_enabled: false })
    await put(server, { key: 'legacy', is_enabled: true })
    await OpenFeature.setProviderAndWait(provider(server))
    const of = OpenFeature.getClient()
    const events: string[] = []
    for (const type of [ProviderEvents.Ready, ProviderEvents.Stale, ProviderEvents.ConfigurationChanged]) {
      of.addHandler(type, (e) => {
        const keys = e?.flagsChanged as string[] | undefined
        events.push(keys ? `${type} ${keys.join(',')}` : type)
      })
    }
    events.splice(0) // addHandler runs a READY handler at once for a provider that is already ready

    await server.stop()
    await expect.poll(() => of.providerStatus).toBe(ProviderStatus.STALE)
    expect(await of.getBooleanDetails('checkout', true, { targetingKey: 'u' })).toMatchObject({
      value: false,
      reason: 'DISABLED',
    })

    // Changes made while this provider is cut off, through another server on the same database.
    const side = await start({ databaseUrl: server.databaseUrl })
    await put(side, { key: 'checkout', is_enabled: true })
    expect((await side.request('/api/flags/legacy', { method: 'DELETE' })).status).toBe(204)
    await side.stop()

    const restarted = await start({ databaseUrl: server.databaseUrl, port: server.port })
    const requests = countRequests(restarted)
    await expect.poll(() => of.providerStatus, { timeout: 5000 }).toBe(ProviderStatus.READY)
    expect(await of.getBooleanValue('checkout', false, { targetingKey: 'u' })).toBe(true)
    expect(await of.getBooleanDetails('legacy', true)).toMatchObject({ errorCode: ErrorCode.FLAG_NOT_FOUND })
    expect(events).toEqual([
      ProviderEvents.Stale,
      `${ProviderEvents.ConfigurationChanged} checkout,legacy`,
      ProviderEvents.Ready,
    ])
    // It resumed from the last event it had applied instead of asking for the whole set again.
    expect(requests.at(-1)).toEqual({ url: '/stream', lastEventId: expect.stringMatching(/^\d+$/) })
  })

  it('stops impressions with one warning: the flat API has no impression ingest', async () => {
    const server = await start()
    await put(server, { key: 'checkout', is_enabled: true })
    const seen = countRequests(server)
    const warnings: string[] = []
    const sp = new FlagsyncServerProvider({
      streamUrl: `${server.url}/stream`,
      sdkKey: KEY,
      impressions: { flushIntervalMs: 0, onWarning: (message) => warnings.push(message) },
    })
    await OpenFeature.setProviderAndWait(sp)
    const of = OpenFeature.getClient()
    for (let i = 0; i < 5; i++)
      expect(await of.getBooleanValue('checkout', false, { targetingKey: `u-${i}` })).toBe(true)
    await OpenFeature.close()
    expect(warnings).toEqual([expect.stringMatching(/flat API.*no impressions/)])
    expect(sp.impressionStatus()).toMatchObject({ enabled: false, queued: 0, delivered: 0 })
    expect(seen.filter((r) => r.url !== '/stream')).toEqual([])
  })
})
