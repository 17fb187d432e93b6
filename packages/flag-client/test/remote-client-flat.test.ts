import { createRemoteFlagClient, FlagsyncProvider, type RemoteFlagClient } from '@flagsync/flag-client'
import { startTestServer, type TestServer } from '@flagsync/test-support/test-server'
import { OpenFeature, ProviderEvents } from '@openfeature/web-sdk'
import { afterEach, describe, expect, it } from 'vitest'

const SDK_KEY = 'sk-remote-flat'
const CLIENT_KEY = 'pk-remote-flat'

describe('createRemoteFlagClient against the flat API with CLIENT_KEY', () => {
  const servers: TestServer[] = []
  const clients: RemoteFlagClient[] = []
  afterEach(async () => {
    await OpenFeature.clearProviders()
    for (const c of clients.splice(0)) await c.close()
    for (const s of servers.splice(0)) await s.dispose()
  })

  async function start(context: Record<string, unknown>, extra: { reconnect?: { baseMs: number } } = {}) {
    const server = await startTestServer({ sdkKey: SDK_KEY, clientKey: CLIENT_KEY })
    servers.push(server)
    const put = async (flag: Record<string, unknown>) =>
      expect((await server.request('/api/flags', { method: 'POST', body: flag })).status).toBe(200)
    await put({ key: 'banner', is_enabled: true })
    await put({
      key: 'beta',
      is_enabled: true,
      rollout_percentage: 0,
      rules: [{ attribute: 'country', operator: 'equals', values: ['DE'] }],
    })
    const flags = createRemoteFlagClient({
      baseUrl: server.url,
      clientKey: CLIENT_KEY,
      context,
      storage: null,
      ...extra,
    })
    clients.push(flags)
    return { server, flags }
  }

  it('serves the values of its context, a PATCH over the refresh stream, and another context on setContext', async () => {
    const { server, flags } = await start({ user_id: 'u-1', country: 'DE' })
    await flags.ready()
    expect(flags.isEnabled('banner')).toBe(true)
    expect(flags.evaluate('beta')).toMatchObject({ value: true, reason: 'TARGETING_MATCH' })
    const res = await server.request('/api/flags/banner', { method: 'PATCH', body: { is_enabled: false } })
    expect(res.status).toBe(200)
    await expect
      .poll(() => flags.evaluate('banner'), { timeout: 10_000 })
      .toMatchObject({
        value: false,
        reason: 'DISABLED',
      })
    await flags.setContext({ user_id: 'u-1', country: 'FR' })
    expect(flags.evaluate('beta')).toMatchObject({ value: false, reason: 'SPLIT' })
  })

  it('reports a dropped refresh stream as reconnecting, and keeps serving its values', async () => {
    const { server, flags } = await start({ user_id: 'u-1', country: 'DE' }, { reconnect: { baseMs: 4000 } })
    await flags.ready()
    await expect.poll(() => flags.status().state).toBe('live')
    const stopped = server.stop()
    // Before the first reconnect (4 s backoff) re-fetches: the stream's own end says so.
    await expect.poll(() => flags.status().state, { timeout: 3000, interval: 20 }).toBe('reconnecting')
    await stopped
    await expect.poll(() => flags.status().failures, { timeout: 15_000 }).toBeGreaterThan(0) // the re-fetch at reconnect fails too
    expect(flags.isEnabled('banner')).toBe(true)
  })

  it('refuses a wrong key with its status, and the OpenFeature provider fails fast on it', async () => {
    const server = await startTestServer({ sdkKey: SDK_KEY, clientKey: CLIENT_KEY })
    servers.push(server)
    const flags = createRemoteFlagClient({ baseUrl: server.url, clientKey: 'wrong', storage: null })
    clients.push(flags)
    await expect.poll(() => flags.status().lastError?.status).toBe(401)
    await expect(OpenFeature.setProviderAndWait('remote-wrong', new FlagsyncProvider(flags))).rejects.toThrow(/refused/)
  })

  it('drives the OpenFeature web SDK: values, a PATCH as a configuration change, and setContext re-fetching', async () => {
    const { server, flags } = await start({ targetingKey: 'u-1', country: 'DE' })
    await OpenFeature.setContext('remote', { targetingKey: 'u-1', country: 'DE' })
    await OpenFeature.setProviderAndWait('remote', new FlagsyncProvider(flags))
    const client = OpenFeature.getClient('remote')
    expect(client.getBooleanDetails('banner', false)).toMatchObject({ value: true, reason: 'DEFAULT' })
    expect(client.getBooleanDetails('beta', false)).toMatchObject({ value: true, reason: 'TARGETING_MATCH' })
    expect(client.getStringDetails('beta', 'x')).toMatchObject({ value: 'x', errorCode: 'TYPE_MISMATCH' })
    expect(client.getBooleanDetails('nope', false)).toMatchObject({ errorCode: 'FLAG_NOT_FOUND' })

    const changed: string[][] = []
    client.addHandler(ProviderEvents.ConfigurationChanged, (e) => changed.push(e?.flagsChanged ?? []))
    await server.request('/api/flags/banner', { method: 'PATCH', body: { is_enabled: false } })
    await expect.poll(() => client.getBooleanValue('banner', true), { timeout: 10_000 }).toBe(false)
    expect(changed).toContainEqual(['banner'])

    await OpenFeature.setContext('remote', { targetingKey: 'u-1', country: 'FR' })
    expect(flags.context()).toEqual({ user_id: 'u-1', country: 'FR' })
    expect(client.getBooleanDetails('beta', true)).toMatchObject({ value: false, reason: 'SPLIT' })
  })

  it('adopts the context given to OpenFeature before the provider: its values are there when setProviderAndWait resolves', async () => {
    const { flags } = await start({})
    await OpenFeature.setContext('remote-initial', { targetingKey: 'u-1', country: 'DE' })
    await OpenFeature.setProviderAndWait('remote-initial', new FlagsyncProvider(flags))
    expect(flags.context()).toEqual({ user_id: 'u-1', country: 'DE' })
    const client = OpenFeature.getClient('remote-initial')
    expect(client.getBooleanDetails('beta', false)).toMatchObject({ value: true, reason: 'TARGETING_MATCH' })
  })

  it("keeps the client's own context when OpenFeature was given none", async () => {
    const { flags } = await start({ user_id: 'u-2', country: 'DE' })
    await OpenFeature.setProviderAndWait('remote-own', new FlagsyncProvider(flags))
    expect(flags.context()).toEqual({ user_id: 'u-2', country: 'DE' })
    expect(OpenFeature.getClient('remote-own').getBooleanValue('beta', false)).toBe(true)
  })
})
