import {
  createFlagClient,
  createSyncClient,
  type FlagClient,
  manualOnlineSource,
  type SyncClient,
} from '@flagsync/sync-client'
import { startTestServer, type TestServer } from '@flagsync/test-support/test-server'
import { IDBFactory, IDBKeyRange } from 'fake-indexeddb'
import { afterEach, describe, expect, it } from 'vitest'

const closers: Array<() => Promise<void>> = []
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close()
})

/** A fetch whose response bodies arrive late: the stream's echo of a change lands after the receiver's ack. */
function slowStreamFetch(delayMs: number): typeof fetch {
  return async (input, init) => {
    const res = await fetch(input, init)
    if (!res.body) return res
    const reader = res.body.getReader()
    const delayed = new ReadableStream<Uint8Array>({
      async pull(controller) {
        const { done, value } = await reader.read()
        if (done) return controller.close()
        await new Promise((r) => setTimeout(r, delayMs))
        controller.enqueue(value)
      },
      cancel: (reason) => reader.cancel(reason),
    })
    return new Response(delayed, { status: res.status, headers: res.headers })
  }
}

describe('local-first view against the real server', () => {
  let server: TestServer
  let sync: SyncClient
  let flags: FlagClient

  async function setUp() {
    server = await startTestServer()
    closers.push(() => server.dispose())
    await server.request('/api/flags', { method: 'POST', body: { key: 'checkout', is_enabled: true } })
    const online = manualOnlineSource(false)
    const indexedDB = new IDBFactory()
    sync = createSyncClient({
      webhookUrl: `${server.url}/sync`,
      indexedDB,
      IDBKeyRange,
      online,
      locks: null,
      broadcastChannel: null,
    })
    closers.push(() => sync.close())
    flags = createFlagClient({
      streamUrl: `${server.url}/stream`,
      indexedDB,
      IDBKeyRange,
      syncClient: sync,
      fetch: slowStreamFetch(300),
    })
    closers.push(() => flags.close())
    await flags.ready()
    return online
  }

  it('shows an offline edit at once, delivers it later, and never shows the stale value in between', async () => {
    const online = await setUp()
    expect(flags.isEnabled('checkout')).toBe(true)

    await flags.updateFlag('checkout', { is_enabled: false })
    expect(flags.isEnabled('checkout')).toBe(false) // at once, while offline

    // From here on, every value the view shows is recorded: on each change event and every 2 ms.
    const seen: boolean[] = []
    const sample = () => seen.push(flags.getFlag('checkout')?.is_enabled === true)
    const unsubscribe = flags.subscribe(sample)
    const sampler = setInterval(sample, 2)
    closers.push(async () => {
      clearInterval(sampler)
      unsubscribe()
    })
    expect((await (await server.request('/api/flags/checkout')).json()).is_enabled).toBe(true)
    expect(await sync.pending()).toBe(1)

    online.setOnline(true)
    sync.start()
    // Delivered: the server has it, the outbox is empty, and later the stream echoes it.
    await expect.poll(async () => (await (await server.request('/api/flags/checkout')).json()).is_enabled).toBe(false)
    await expect.poll(() => sync.pending()).toBe(0)
    const afterAck = seen.length
    await new Promise((r) => setTimeout(r, 600)) // past the delayed echo
    expect(seen.length).toBeGreaterThan(afterAck)
    expect(seen.every((enabled) => enabled === false)).toBe(true)
    expect(flags.getFlag('checkout')?.is_enabled).toBe(false)
  })

  it('shows a local create and delete at once and agrees with the server once synced', async () => {
    const online = await setUp()
    await flags.createFlag({ key: 'fresh', is_enabled: true, rollout_percentage: 0 })
    await flags.deleteFlag('checkout')
    expect(flags.allFlags().map((f) => f.key)).toEqual(['fresh'])
    expect(flags.isEnabled('fresh', { user_id: 'u1' })).toBe(false) // evaluated locally: rollout 0
    online.setOnline(true)
    sync.start()
    await expect
      .poll(async () => (await (await server.request('/api/flags')).json()).map((f: { key: string }) => f.key))
      .toEqual(['fresh'])
    await expect.poll(() => sync.pending()).toBe(0)
    expect(flags.allFlags().map((f) => f.key)).toEqual(['fresh'])
  })

  it('after a replayed (duplicate) batch, shows the server state instead of holding the replayed edit', async () => {
    const server = await startTestServer()
    closers.push(() => server.dispose())
    await server.request('/api/flags', { method: 'POST', body: { key: 'f', is_enabled: false } })
    let calls = 0
    const loseFirstResponse: typeof fetch = async (input, init) => {
      const res = await fetch(input, init)
      if (++calls === 1) {
        await res.arrayBuffer() // applied by the receiver, but the answer never arrives
        throw new TypeError('fetch failed')
      }
      return res
    }
    const indexedDB = new IDBFactory()
    const sync = createSyncClient({
      webhookUrl: `${server.url}/sync`,
      indexedDB,
      IDBKeyRange,
      fetch: loseFirstResponse,
      online: manualOnlineSource(true),
      locks: null,
      broadcastChannel: null,
    })
    closers.push(() => sync.close())
    const flags = createFlagClient({ streamUrl: `${server.url}/stream`, indexedDB, IDBKeyRange, syncClient: sync })
    closers.push(() => flags.close())
    await flags.ready()

    await flags.updateFlag('f', { is_enabled: true })
    await sync.flush() // applied, answer lost: still queued
    expect(await sync.pending()).toBe(1)
    // Meanwhile someone turns it off again; the queued edit still shows locally, as local-first should.
    await server.request('/api/flags/f', { method: 'PATCH', body: { is_enabled: false } })
    expect(flags.getFlag('f')?.is_enabled).toBe(true)

    const resent = await sync.flush() // same batchId: the receiver answers duplicate, applies nothing
    expect(resent).toEqual({ delivered: 1, pending: 0 })
    await expect.poll(() => flags.getFlag('f')?.is_enabled, { timeout: 2000 }).toBe(false)
    expect((await (await server.request('/api/flags/f')).json()).is_enabled).toBe(false)
  })
})
