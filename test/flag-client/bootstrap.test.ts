/**
 * The `bootstrap` option against the real flat API: a client given the
 * server's current flags (as a server-rendered page embeds them) serves them
 * from creation, and the flag cache of an earlier visit, older than them,
 * never replaces them while the stream is slow: neither its `localStorage`
 * copy (read during creation) nor its IndexedDB row (read later). A cached set
 * with a higher revision does replace them, and the stream replaces any set.
 */
import {
  type ClientFlag,
  createFlagClient,
  type FlagClient,
  type FlagClientOptions,
  isNewerFlagSet,
  type KeyValueStorage,
  manualOnlineSource,
} from '@flagsync/flag-client'
import { startTestServer, type TestServer } from '@flagsync/test-support/test-server'
import { IDBFactory, IDBKeyRange } from 'fake-indexeddb'
import { afterEach, describe, expect, it } from 'vitest'
import { FlagCache } from '../../packages/flag-client/src/flag-cache.js'

const servers: TestServer[] = []
const clients: FlagClient[] = []
afterEach(async () => {
  for (const c of clients.splice(0)) await c.close()
  for (const s of servers.splice(0)) await s.dispose()
})

function memoryStorage(): KeyValueStorage {
  const items = new Map<string, string>()
  return {
    getItem: (k) => items.get(k) ?? null,
    setItem: (k, v) => void items.set(k, v),
    removeItem: (k) => void items.delete(k),
  }
}

/** `fetch` whose stream requests wait `ms` before they go out: a slow stream. */
const slowStream =
  (ms: number): typeof fetch =>
  async (input, init) => {
    if (String(input instanceof Request ? input.url : input).includes('/stream')) {
      await new Promise((resolve) => setTimeout(resolve, ms))
    }
    return fetch(input, init)
  }

async function serverWith(flag: Record<string, unknown>) {
  const server = await startTestServer()
  servers.push(server)
  await put(server, flag)
  return server
}
async function put(server: TestServer, flag: Record<string, unknown>) {
  expect((await server.request('/api/flags', { method: 'POST', body: flag })).status).toBe(200)
}
const flagsOf = async (server: TestServer) => (await (await server.request('/api/flags')).json()) as ClientFlag[]

function client(options: FlagClientOptions): FlagClient {
  const c = createFlagClient({ dbName: 'visit', IDBKeyRange, impressions: false, ...options })
  clients.push(c)
  return c
}

/** The values of `key` the client served: at once, and after every change, until `until` holds. */
async function servedUntil(flags: FlagClient, key: string, until: () => boolean): Promise<unknown[]> {
  const served = [flags.getFlag(key)?.is_enabled]
  const off = flags.subscribe((e) => {
    if (e.type === 'flags') served.push(flags.getFlag(key)?.is_enabled)
  })
  await expect.poll(until, { timeout: 10_000 }).toBe(true)
  off()
  return served
}

describe('a client with bootstrap flags and an older flag cache', () => {
  it('keeps the bootstrap over the older localStorage copy until the slow stream brings the server’s set', async () => {
    const server = await serverWith({ key: 'checkout', is_enabled: false })
    const indexedDB = new IDBFactory()
    const localStorage = memoryStorage()
    const streamUrl = `${server.url}/stream`
    // First visit: the stream's set is saved (localStorage copy and IndexedDB row).
    const first = client({ streamUrl, indexedDB, localStorage })
    await expect.poll(() => first.status().source).toBe('stream')
    await first.close()

    await put(server, { key: 'checkout', is_enabled: true })
    const bootstrap = await flagsOf(server)
    const second = client({ streamUrl, indexedDB, localStorage, bootstrap, fetch: slowStream(500) })
    expect(second.status().source).toBe('bootstrap')
    expect(second.getFlag('checkout')?.is_enabled).toBe(true)
    await second.ready()
    const served = await servedUntil(second, 'checkout', () => second.status().source === 'stream')
    expect(served.every((value) => value === true)).toBe(true)
    expect(second.getFlag('checkout')?.is_enabled).toBe(true)
  })

  it('keeps the bootstrap over an older set read from IndexedDB, and takes the cache’s environment', async () => {
    const streamUrl = 'http://127.0.0.1:9/stream'
    const indexedDB = new IDBFactory()
    const cache = new FlagCache('visit:flags', streamUrl, { indexedDB, IDBKeyRange })
    await cache.save([{ key: 'checkout', is_enabled: false, revision: 3 }], 'env-1', 1)
    cache.close()
    const bootstrap = [{ key: 'checkout', is_enabled: true, revision: 5 }]
    const offline = { indexedDB, localStorage: null, online: manualOnlineSource(false), bootstrap }
    const flags = client({ streamUrl, ...offline })
    // The environment is the cache's once IndexedDB has answered; the flags stay the bootstrap's.
    const served = await servedUntil(flags, 'checkout', () => flags.status().environmentId === 'env-1')
    expect(served).toEqual([true])
    expect(flags.status().source).toBe('bootstrap')
  })

  it('takes a cached set with a higher revision than the bootstrap (the page was rendered earlier)', async () => {
    const streamUrl = 'http://127.0.0.1:9/stream'
    const localStorage = memoryStorage()
    const cache = new FlagCache('visit:flags', streamUrl, undefined, localStorage)
    await cache.save([{ key: 'checkout', is_enabled: false, revision: 9 }], null, 1)
    const flags = client({
      streamUrl,
      indexedDB: new IDBFactory(),
      localStorage,
      online: manualOnlineSource(false),
      bootstrap: [{ key: 'checkout', is_enabled: true, revision: 5 }],
    })
    expect(flags.status().source).toBe('cache')
    expect(flags.getFlag('checkout')?.is_enabled).toBe(false)
  })

  it('serves the bootstrap from creation: ready at once, entries without a key skipped, nothing saved', async () => {
    const streamUrl = 'http://127.0.0.1:9/stream'
    const localStorage = memoryStorage()
    const flags = client({
      streamUrl,
      indexedDB: new IDBFactory(),
      localStorage,
      online: manualOnlineSource(false),
      bootstrap: [{ key: 'a', is_enabled: true }, { is_enabled: true } as never, null as never],
    })
    await flags.ready()
    expect(flags.allFlags().map((f) => f.key)).toEqual(['a'])
    expect(flags.isEnabled('a')).toBe(true)
    await flags.close()
    expect(localStorage.getItem('visit:flags')).toBeNull()
  })
})

describe('isNewerFlagSet', () => {
  const set = (...revisions: Array<number | undefined>) =>
    revisions.map((revision, i) => ({
      key: `f${i}`,
      is_enabled: true,
      ...(revision === undefined ? {} : { revision }),
    }))

  it('compares the highest revisions; equal, or either side without revisions, is not newer', () => {
    expect(isNewerFlagSet(set(2, 8), set(7, 1))).toBe(true)
    expect(isNewerFlagSet(set(7), set(2, 7))).toBe(false)
    expect(isNewerFlagSet(set(3), set(7))).toBe(false)
    expect(isNewerFlagSet(set(undefined), set(7))).toBe(false)
    expect(isNewerFlagSet(set(9), set(undefined))).toBe(false)
    expect(isNewerFlagSet(set(9), [])).toBe(false)
  })
})
