import { createSyncClient, manualOnlineSource, type SyncClient } from '@flagsync/sync-client'
import { DIALECTS } from '@flagsync/test-support/databases'
import { startTestServer, type TestServer } from '@flagsync/test-support/test-server'
import { IDBFactory, IDBKeyRange } from 'fake-indexeddb'
import { afterEach, describe, expect, it } from 'vitest'

const servers: TestServer[] = []
const clients: SyncClient[] = []
afterEach(async () => {
  for (const c of clients.splice(0)) await c.close()
  for (const s of servers.splice(0)) await s.dispose()
})

interface Faults {
  /** Requests answered 503 by a "proxy" before reaching the receiver. */
  unavailable: number
  /** Requests the receiver applied whose response was then lost. */
  dropped: number
  sent: string[]
}

/**
 * A fetch that injects faults in front of the real receiver: every third
 * delivery gets a 503 without reaching it, and every fourth reaches it (and is
 * applied) but its response is lost, as when a connection dies on the way back.
 */
function faultyFetch(faults: Faults): typeof fetch {
  let n = 0
  return async (input, init) => {
    n++
    const body = JSON.parse(String(init?.body)) as { batchId: string }
    faults.sent.push(body.batchId)
    if (n % 3 === 0) {
      faults.unavailable++
      return new Response(JSON.stringify({ error: 'try later', code: 'unavailable' }), {
        status: 503,
        headers: { 'Content-Type': 'application/json', 'Retry-After': '0' },
      })
    }
    const res = await fetch(input, init)
    if (n % 4 === 0) {
      await res.arrayBuffer()
      faults.dropped++
      throw new TypeError('fetch failed: connection reset after the request was applied')
    }
    return res
  }
}

type FlagState = Record<string, Record<string, unknown>>

describe.each(DIALECTS)('sync client against the real receiver on %s', (dialect) => {
  it('ends with exactly the intended flags despite 503s and lost responses', async () => {
    const server = await startTestServer({ dialect })
    servers.push(server)
    const faults: Faults = { unavailable: 0, dropped: 0, sent: [] }
    const client = createSyncClient({
      webhookUrl: `${server.url}/sync`,
      indexedDB: new IDBFactory(),
      IDBKeyRange,
      fetch: faultyFetch(faults),
      online: manualOnlineSource(true),
      locks: null,
      broadcastChannel: null,
      batchSize: 7,
      retry: { baseMs: 5, maxMs: 20, jitter: 0 },
    })
    clients.push(client)

    // An order-sensitive history over 40 flags; the model applies it the way the receiver must.
    const model: FlagState = {}
    for (let i = 0; i < 200; i++) {
      const key = `flag-${i % 40}`
      const step = Math.floor(i / 40)
      if (step === 0 || (step === 3 && i % 5 === 0)) {
        const record = { key, is_enabled: i % 2 === 0, description: `created at ${i}` }
        await client.insert('flags', record, { recordId: key })
        model[key] = {
          key,
          is_enabled: i % 2 === 0,
          rollout_percentage: null,
          description: `created at ${i}`,
          rules: [],
        }
      } else if (step === 4 && i % 7 === 0) {
        await client.delete('flags', key)
        delete model[key]
      } else if (model[key]) {
        const changes = { rollout_percentage: i % 101, description: `step ${step} at ${i}` }
        await client.update('flags', key, changes)
        model[key] = { ...model[key], ...changes }
      }
    }

    client.start()
    await expect.poll(async () => (await client.status()).pending, { timeout: 15_000, interval: 50 }).toBe(0)
    const res = await server.request('/api/flags')
    const listed = (await res.json()) as Array<{ key: string; revision: number }>
    // Each flag carries the read-only revision of its last change; the rest is the model.
    for (const f of listed) expect(Number.isInteger(f.revision) && f.revision > 0, f.key).toBe(true)
    const served = Object.fromEntries(listed.map(({ revision: _readOnly, ...f }) => [f.key, f]))
    expect(served).toEqual(model)
    expect(faults.unavailable).toBeGreaterThan(0)
    expect(faults.dropped).toBeGreaterThan(0)
    // Every lost response was retried with the same batchId (and deduped by the receiver).
    expect(new Set(faults.sent).size).toBeLessThan(faults.sent.length)
  })
  it("delivers the root README's first sample as written: insert('flags', flag) with no recordId", async () => {
    const server = await startTestServer({ dialect })
    servers.push(server)
    const sync = createSyncClient({
      webhookUrl: `${server.url}/sync`,
      indexedDB: new IDBFactory(),
      IDBKeyRange,
      online: manualOnlineSource(true),
      locks: null,
      broadcastChannel: null,
    })
    clients.push(sync)
    await sync.insert('flags', { key: 'new-checkout', is_enabled: true, rollout_percentage: 10 })
    const flushed = await sync.flush()
    expect((await sync.status()).state, JSON.stringify(flushed)).not.toBe('blocked')
    const res = await server.request('/api/flags/new-checkout')
    expect(res.status).toBe(200)
    expect(await res.json()).toMatchObject({ key: 'new-checkout', is_enabled: true, rollout_percentage: 10 })
  })
})
