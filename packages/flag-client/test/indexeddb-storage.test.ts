import { IndexedDbImpressionQueue } from '@flagsync/flag-client'
import { Dexie } from 'dexie'
import { IDBFactory, IDBKeyRange } from 'fake-indexeddb'
import { describe, expect, it } from 'vitest'
import { FlagCache } from '../src/flag-cache.js'

const row = (url: string, n: number) => ({ url, json: `{"n":${n}}`, claimedUntil: 0, owner: '' })

describe('the impression queue in plain IndexedDB', () => {
  it('claims the oldest free URL, one deliverer at a time, and frees, removes and counts exactly the given rows', async () => {
    const indexedDB = new IDBFactory()
    const tabA = new IndexedDbImpressionQueue('q', indexedDB, IDBKeyRange)
    const tabB = new IndexedDbImpressionQueue('q', indexedDB, IDBKeyRange)
    await tabA.add([row('u1', 1), row('u2', 2), row('u1', 3), row('u1', 4)])
    expect(await tabB.count()).toBe(4)

    const [a, b] = await Promise.all([tabA.claim(2, 'A', 1000, 5000), tabB.claim(10, 'B', 1000, 5000)])
    expect(a.map((r) => r.json)).toEqual(['{"n":1}', '{"n":3}'])
    expect(a.every((r) => r.url === 'u1' && r.owner === 'A' && r.claimedUntil === 5000)).toBe(true)
    // B started after A's claim committed: A's rows are taken, the oldest free row is u2's.
    expect(b.map((r) => r.json)).toEqual(['{"n":2}'])

    // A claim that expired is free again; the owner may re-claim its own rows at once.
    expect((await tabB.claim(10, 'B', 1000, 5000)).map((r) => r.json)).toEqual(['{"n":2}'])
    expect((await tabB.claim(10, 'C', 6000, 9000)).map((r) => r.json)).toEqual(['{"n":1}', '{"n":3}', '{"n":4}'])

    await tabA.release(a.map((r) => r.seq))
    await tabA.remove(b.map((r) => r.seq))
    expect(await tabA.count()).toBe(3)
    const again = await tabA.claim(10, 'A', 1000, 5000)
    expect(again.map((r) => r.json)).toEqual(['{"n":1}', '{"n":3}']) // released; n=4 is still C's
    tabA.close()
    tabB.close()
  })

  it('rejects every operation where there is no IndexedDB (so the reporter falls back to memory)', async () => {
    const g = globalThis as { indexedDB?: unknown }
    expect(g.indexedDB).toBeUndefined()
    const queue = new IndexedDbImpressionQueue('q')
    await expect(queue.count()).rejects.toThrow('IndexedDB is not available here')
    queue.close()
  })

  it('opens the databases earlier releases wrote with Dexie, rows and all', async () => {
    const indexedDB = new IDBFactory()
    const oldCache = new Dexie('flags', { indexedDB, IDBKeyRange })
    oldCache.version(1).stores({ sets: 'id' })
    await oldCache
      .table('sets')
      .put({ id: 'http://x/stream', flags: [{ key: 'f', is_enabled: true }], environmentId: 'e', savedAt: 7 })
    const oldQueue = new Dexie('impressions', { indexedDB, IDBKeyRange })
    oldQueue.version(1).stores({ rows: '++seq, [url+seq]' })
    await oldQueue.table('rows').bulkAdd([row('u', 1), row('u', 2)])
    oldCache.close()
    oldQueue.close()

    const cache = new FlagCache('flags', 'http://x/stream', { indexedDB, IDBKeyRange })
    expect(await cache.load()).toEqual({
      id: 'http://x/stream',
      flags: [{ key: 'f', is_enabled: true }],
      environmentId: 'e',
      savedAt: 7,
    })
    await cache.save([], null, 8)
    expect((await cache.load())?.savedAt).toBe(8)
    cache.close()

    const queue = new IndexedDbImpressionQueue('impressions', indexedDB, IDBKeyRange)
    await queue.add([row('u', 3)])
    expect((await queue.claim(10, 'A', 0, 1)).map((r) => [r.seq, r.json])).toEqual([
      [1, '{"n":1}'],
      [2, '{"n":2}'],
      [3, '{"n":3}'],
    ])
    queue.close()
  })
})
