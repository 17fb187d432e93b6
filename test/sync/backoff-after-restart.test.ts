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

const servers: TestServer[] = []
const closers: Array<() => Promise<void>> = []
afterEach(async () => {
  for (const close of closers.splice(0)) await close()
  for (const s of servers.splice(0)) await s.dispose()
})

async function start(overrides: Parameters<typeof startTestServer>[0] = {}): Promise<TestServer> {
  const server = await startTestServer(overrides)
  servers.push(server)
  return server
}

describe('after the server comes back', () => {
  it("the flag client's live stream cuts the sync client's backoff short", async () => {
    const server = await start()
    const online = manualOnlineSource(true)
    const sync: SyncClient = createSyncClient({
      webhookUrl: `${server.url}/sync`,
      indexedDB: new IDBFactory(),
      IDBKeyRange,
      online,
      locks: null,
      broadcastChannel: null,
      // Half a minute after the first failure: far beyond this test's patience unless something cuts it short.
      retry: { baseMs: 30_000, maxMs: 30_000, jitter: 0 },
    })
    const flags: FlagClient = createFlagClient({
      streamUrl: `${server.url}/stream`,
      indexedDB: new IDBFactory(),
      IDBKeyRange,
      online,
      syncClient: sync,
      reconnect: { baseMs: 50, maxMs: 200 },
    })
    closers.push(
      () => flags.close(),
      () => sync.close(),
    )
    sync.start()
    await flags.ready()

    await server.stop()
    await expect.poll(() => flags.status().state).toBe('reconnecting')
    await flags.createFlag({ key: 'written-while-down', is_enabled: true })
    await expect.poll(async () => (await sync.status()).lastError?.kind, { timeout: 5000 }).toBe('network')
    const { nextAttemptAt } = await sync.status()
    expect(nextAttemptAt).toBeGreaterThan(Date.now() + 20_000)

    const restarted = await start({ databaseUrl: server.databaseUrl, port: server.port })
    const back = Date.now()
    await expect.poll(() => flags.status().state, { timeout: 5000 }).toBe('live')
    await expect
      .poll(async () => (await restarted.request('/api/flags/written-while-down')).status, { timeout: 5000 })
      .toBe(200)
    expect(Date.now() - back).toBeLessThan(5000)
    // The receiver applied it; the acknowledgement is recorded in IndexedDB a moment later.
    await expect
      .poll(async () => await sync.status(), { timeout: 2000 })
      .toMatchObject({ state: 'idle', pending: 0, lastError: null })
  })
})
