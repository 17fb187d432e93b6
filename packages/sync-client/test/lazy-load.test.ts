import { IDBFactory, IDBKeyRange } from 'fake-indexeddb'
import { afterEach, describe, expect, it, vi } from 'vitest'
import type { SyncClient, SyncClientOptions } from '../src/index.js'
import { FakeLocks, ModelReceiver, networkError, status, useMockServer, WEBHOOK } from './helpers.js'

// The rare paths live in a chunk of their own, loaded on first use (lazy-ops.ts, loaded by lazy.ts). The other
// suites load it up front (useMockServer); here every test starts from a fresh module graph, so the chunk is not
// loaded until the client needs it: the normal path must not load it, each rare path must load it and then behave as
// it did, and a chunk that cannot be loaded must fail the call with a SyncClientError and lose nothing.

const server = useMockServer()
const clients: SyncClient[] = []

afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close()))
  vi.doUnmock('../src/lazy-ops.js')
})

/** The client and the lazy loader of a fresh module graph (nothing loaded yet). */
async function fresh(options: Partial<SyncClientOptions> = {}) {
  vi.resetModules()
  const { createSyncClient } = await import('../src/index.js')
  const lazy = await import('../src/lazy.js')
  const indexedDB = new IDBFactory()
  const client = createSyncClient({
    webhookUrl: WEBHOOK,
    indexedDB,
    IDBKeyRange,
    locks: new FakeLocks(),
    broadcastChannel: null,
    ...options,
  })
  clients.push(client)
  const loaded = () => {
    try {
      lazy.lazyNow()
      return true
    } catch {
      return false
    }
  }
  return { client, loaded, indexedDB }
}

/** Makes the lazy chunk fail to load, as on an offline page that did not cache it. */
function chunkOffline(): void {
  vi.doMock('../src/lazy-ops.js', () => {
    throw new TypeError('Failed to fetch dynamically imported module')
  })
}

describe('the lazy chunk', () => {
  it('is not loaded by the normal path: queue, status, deliver, back off, retry', async () => {
    const r = new ModelReceiver()
    server.use(r.handler)
    const { client, loaded } = await fresh({ random: () => 0 })
    const statuses: string[] = []
    client.subscribe((s) => statuses.push(s.state))
    await client.insert('c', { id: '1', v: 1 })
    await client.update('c', '1', { v: 2 })
    await client.enqueue({ action: 'insert', collection: 'c', recordId: '2', record: { v: 1 } })
    r.reply(status(503))
    await client.flush()
    expect((await client.status()).state).toBe('backoff')
    expect(await client.flush()).toEqual({ delivered: 2, pending: 0 })
    await client.delete('c', '2')
    expect(await client.flush()).toEqual({ delivered: 1, pending: 0 })
    expect(await client.outbox()).toEqual([])
    // Listed on every status by the flag client and the React bindings: eager.
    expect(await client.conflicts()).toEqual([])
    expect(r.appliedBatches).toHaveLength(2)
    expect(statuses.length).toBeGreaterThan(0)
    expect(loaded()).toBe(false)
  })

  it('is loaded for the delivery lease when there are no Web Locks, which then delivers', async () => {
    const r = new ModelReceiver()
    server.use(r.handler)
    const { client, loaded } = await fresh({ locks: null })
    await client.insert('c', { id: '1' })
    expect(loaded()).toBe(false)
    expect(await client.flush()).toEqual({ delivered: 1, pending: 0 })
    expect(loaded()).toBe(true)
    expect(r.appliedBatches).toHaveLength(1)
  })

  it('is loaded when a cut needs the remote lookup (insert … delete of a delivered record), and the cut runs again', async () => {
    const r = new ModelReceiver()
    server.use(r.handler)
    const { client, loaded } = await fresh()
    await client.insert('c', { id: '1' })
    await client.flush()
    expect(loaded()).toBe(false)
    // Inserted again and deleted: it exists at the receiver, so the delete must still go out.
    await client.insert('c', { id: '1', v: 2 })
    await client.delete('c', '1')
    expect(await client.pending()).toBe(1)
    expect(loaded()).toBe(true)
    await client.flush()
    expect(r.requests.at(-1)?.operations).toEqual([{ action: 'delete', collection: 'c', recordId: '1' }])
    // A record never delivered still cancels out.
    await client.insert('c', { id: '2' })
    await client.delete('c', '2')
    expect(await client.flush()).toEqual({ delivered: 0, pending: 0 })
  })

  it('is loaded when the remoteKeys table is due a fold, and the acknowledgement is recorded with the fold', async () => {
    const r = new ModelReceiver()
    server.use(r.handler)
    const { FOLD_MIN_ROWS } = await import('../src/remote-records.js')
    const { client, loaded, indexedDB } = await fresh({ batchSize: 1 })
    for (let i = 0; i < FOLD_MIN_ROWS - 1; i++) await client.insert('c', { id: `r${i}` })
    await client.flush()
    expect(loaded()).toBe(false)
    await client.insert('c', { id: 'last' })
    await client.flush()
    expect(loaded()).toBe(true)
    expect(r.appliedBatches).toHaveLength(FOLD_MIN_ROWS)
    // Folded: 64 one-record rows became one row of 64 records.
    expect(await countRows(indexedDB, 'remoteKeys')).toBe(1)
  })

  it('is loaded for a 409 and sets the conflict aside', async () => {
    const r = new ModelReceiver()
    server.use(r.handler)
    const { client, loaded } = await fresh()
    await client.update('flags', 'a', { v: 1 }, { baseRevision: 1 })
    r.reply(
      status(409, {
        code: 'conflict',
        conflicts: [
          { operationIndex: 0, kind: 'field', fields: ['v'], base: null, current: { v: 0 }, currentRevision: 2 },
        ],
      }),
    )
    await client.flush()
    expect(loaded()).toBe(true)
    expect((await client.conflicts()).map((c) => [c.recordId, c.kind])).toEqual([['a', 'field']])
  })

  it('is loaded by retryNow, which then sends a batch waiting out a network failure at once', async () => {
    const r = new ModelReceiver()
    server.use(r.handler)
    r.reply(networkError)
    const { client, loaded } = await fresh({ retry: { baseMs: 60_000, maxMs: 600_000 } })
    await client.insert('c', { id: '1' })
    await client.flush()
    expect((await client.status()).state).toBe('backoff')
    client.start()
    expect(loaded()).toBe(false)
    client.retryNow()
    await vi.waitFor(() => expect(r.appliedBatches).toHaveLength(1))
    expect(loaded()).toBe(true)
  })

  it('is loaded when the browser comes back online, which resets the backoff and sends at once', async () => {
    const r = new ModelReceiver()
    server.use(r.handler)
    r.reply(status(503))
    const { manualOnlineSource } = await import('../src/index.js')
    const online = manualOnlineSource()
    const { client, loaded } = await fresh({ online, retry: { baseMs: 60_000, maxMs: 600_000 } })
    await client.insert('c', { id: '1' })
    await client.flush()
    client.start()
    online.setOnline(false)
    expect(loaded()).toBe(false)
    online.setOnline(true)
    await vi.waitFor(() => expect(r.appliedBatches).toHaveLength(1))
    expect(loaded()).toBe(true)
  })

  it('fails a call with storage_failed when it cannot be loaded, loses nothing, and works once it can', async () => {
    const r = new ModelReceiver()
    server.use(r.handler)
    chunkOffline()
    const { client } = await fresh({ locks: null })
    await client.insert('c', { id: '1' })
    const error = await client.flush().catch((e: unknown) => e)
    expect(error).toMatchObject({ name: 'SyncClientError', code: 'storage_failed' })
    expect((error as Error).message).toMatch(/could not load/)
    const ids = (await client.outbox()).map((e) => e.id)
    expect(ids).toHaveLength(1)
    await expect(client.discard(ids)).rejects.toMatchObject({ code: 'storage_failed' })
    await expect(client.deadLetters()).rejects.toMatchObject({ code: 'storage_failed' })
    expect(await client.pending()).toBe(1)
    expect(r.requests).toHaveLength(0)

    vi.doUnmock('../src/lazy-ops.js')
    expect(await client.flush()).toEqual({ delivered: 1, pending: 0 })
    expect(r.appliedBatches).toHaveLength(1)
  })

  it('a cut that needs it while it cannot be loaded fails and keeps the queue as it was', async () => {
    const r = new ModelReceiver()
    server.use(r.handler)
    const { client } = await fresh()
    await client.insert('c', { id: '1' })
    await client.flush()
    chunkOffline()
    await client.insert('c', { id: '1', v: 2 })
    await client.delete('c', '1')
    await expect(client.flush()).rejects.toMatchObject({ code: 'storage_failed' })
    expect((await client.outbox()).map((e) => e.operation.action)).toEqual(['insert', 'delete'])
    vi.doUnmock('../src/lazy-ops.js')
    await client.flush()
    expect(r.requests.at(-1)?.operations).toEqual([{ action: 'delete', collection: 'c', recordId: '1' }])
  })
})

/** The number of rows of a table of the client's outbox (database `flagsync`), read with IndexedDB itself. */
function countRows(indexedDB: IDBFactory, table: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const open = indexedDB.open('flagsync')
    open.onerror = () => reject(open.error)
    open.onsuccess = () => {
      const request = open.result.transaction(table).objectStore(table).count()
      request.onsuccess = () => {
        open.result.close()
        resolve(request.result)
      }
      request.onerror = () => reject(request.error)
    }
  })
}
