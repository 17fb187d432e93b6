/**
 * The OpenFeature provider during `setProviderAndWait`, with the real
 * @openfeature/web-sdk: the flag set that makes the client ready is what
 * READY announces, so no PROVIDER_CONFIGURATION_CHANGED reaches handlers while
 * the SDK still reports NOT_READY; changes after READY do.
 */
import { createFlagClient, type FlagClient, FlagsyncProvider, manualOnlineSource } from '@flagsync/flag-client'
import { startTestServer, type TestServer } from '@flagsync/test-support/test-server'
import { OpenFeature, ProviderEvents, ProviderStatus } from '@openfeature/web-sdk'
import { IDBFactory, IDBKeyRange } from 'fake-indexeddb'
import { afterEach, describe, expect, it } from 'vitest'
import { FlagCache } from '../../packages/flag-client/src/flag-cache.js'

const servers: TestServer[] = []
const clients: FlagClient[] = []
const handlers: Array<() => void> = []
afterEach(async () => {
  for (const off of handlers.splice(0)) off()
  await OpenFeature.close()
  for (const c of clients.splice(0)) await c.close()
  for (const s of servers.splice(0)) await s.dispose()
})

/** Every provider event the SDK hands to handlers, with the provider status the SDK reported at that moment. */
function recordEvents(): Array<{ event: string; status: ProviderStatus }> {
  const seen: Array<{ event: string; status: ProviderStatus }> = []
  for (const event of [ProviderEvents.Ready, ProviderEvents.Stale, ProviderEvents.ConfigurationChanged]) {
    const handler = () => void seen.push({ event, status: OpenFeature.getClient().providerStatus })
    OpenFeature.addHandler(event, handler)
    handlers.push(() => OpenFeature.removeHandler(event, handler))
  }
  seen.splice(0) // addHandler runs a READY handler at once for the default provider, which is ready
  return seen
}

describe('FlagsyncProvider while setProviderAndWait runs', () => {
  it('emits no CONFIGURATION_CHANGED before READY when the stream brings the first flag set', async () => {
    const server = await startTestServer()
    servers.push(server)
    expect(
      (await server.request('/api/flags', { method: 'POST', body: { key: 'checkout', is_enabled: true } })).status,
    ).toBe(200)
    const seen = recordEvents()
    const flags = createFlagClient({ streamUrl: `${server.url}/stream`, indexedDB: new IDBFactory(), IDBKeyRange })
    clients.push(flags)

    await OpenFeature.setProviderAndWait(new FlagsyncProvider(flags))
    const of = OpenFeature.getClient()
    expect(of.providerStatus).toBe(ProviderStatus.READY)
    expect(of.getBooleanValue('checkout', false)).toBe(true)
    expect(seen.filter((s) => s.event === ProviderEvents.ConfigurationChanged)).toEqual([])
    expect(seen[0]).toEqual({ event: ProviderEvents.Ready, status: ProviderStatus.READY })

    // After READY, a change on the server is announced, with the SDK reporting READY.
    expect(
      (await server.request('/api/flags', { method: 'POST', body: { key: 'checkout', is_enabled: false } })).status,
    ).toBe(200)
    await expect.poll(() => of.getBooleanValue('checkout', true)).toBe(false)
    await expect
      .poll(() => seen.filter((s) => s.event === ProviderEvents.ConfigurationChanged))
      .toEqual([{ event: ProviderEvents.ConfigurationChanged, status: ProviderStatus.READY }])
  })

  it('emits no CONFIGURATION_CHANGED before READY when the set comes from the IndexedDB cache', async () => {
    const STREAM = 'http://127.0.0.1:9/stream'
    const indexedDB = new IDBFactory()
    // A first client fills the IndexedDB cache (no localStorage copy: the next one reads it asynchronously).
    const cache = new FlagCache('ofcache:flags', STREAM, { indexedDB, IDBKeyRange })
    await cache.save([{ key: 'checkout', is_enabled: true, revision: 3 }], null, 1)
    cache.close()
    const seen = recordEvents()
    const flags = createFlagClient({
      streamUrl: STREAM,
      dbName: 'ofcache',
      indexedDB,
      IDBKeyRange,
      localStorage: null,
      online: manualOnlineSource(false),
      impressions: false,
    })
    clients.push(flags)
    expect(flags.status().source).toBe('none')

    await OpenFeature.setProviderAndWait(new FlagsyncProvider(flags))
    const of = OpenFeature.getClient()
    expect(of.getBooleanValue('checkout', false)).toBe(true)
    await expect.poll(() => of.providerStatus).toBe(ProviderStatus.STALE) // offline: the stream is not there
    expect(seen.filter((s) => s.event === ProviderEvents.ConfigurationChanged)).toEqual([])
    expect(seen.map((s) => s.event)).toEqual([ProviderEvents.Ready, ProviderEvents.Stale])
  })
})
