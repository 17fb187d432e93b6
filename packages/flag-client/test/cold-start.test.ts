import type { Operation } from '@flagsync/protocol'
import { IDBFactory, IDBKeyRange } from 'fake-indexeddb'
import { describe, expect, it } from 'vitest'
import { FlagCache } from '../src/flag-cache.js'
import { createFlagClient, type FlagOutbox, manualOnlineSource } from '../src/index.js'

const STREAM = 'http://flags.test/stream'
const flag = (key: string) => ({ key, is_enabled: false, rollout_percentage: null, description: null, rules: [] })

/** An outbox in memory that counts its reads and notes what the flag client showed when each began. */
function memoryOutbox(queued: Operation[], seen: () => unknown) {
  const entries = queued.map((operation, i) => ({ id: i + 1, operation }))
  const listeners = new Set<(status: unknown) => void>()
  const reads: unknown[] = []
  const outbox: FlagOutbox = {
    insert: async () => '',
    update: async () => {},
    delete: async () => {},
    async enqueue(operation) {
      entries.push({ id: entries.length + 1, operation })
      for (const l of listeners) l(null)
      return entries.length
    },
    async outbox() {
      reads.push(seen())
      return [...entries]
    },
    subscribe(listener) {
      listeners.add(listener)
      return () => listeners.delete(listener)
    },
    onDelivered: () => () => {},
  }
  return { outbox, reads }
}

async function cached(indexedDB: IDBFactory, keys: string[]) {
  const cache = new FlagCache('cold:flags', STREAM, { indexedDB, IDBKeyRange })
  await cache.save(keys.map(flag) as never, 'env-1', 7)
  cache.close()
}

const options = (indexedDB: IDBFactory) => ({
  streamUrl: STREAM,
  dbName: 'cold',
  indexedDB,
  IDBKeyRange,
  online: manualOnlineSource(false),
  impressions: false as const,
})

describe('cold start from the IndexedDB cache', () => {
  it('answers from the cache before it reads the outbox, then shows the queued edits on top', async () => {
    const indexedDB = new IDBFactory()
    await cached(indexedDB, ['a', 'b'])
    let client: ReturnType<typeof createFlagClient> | undefined
    const { outbox, reads } = memoryOutbox(
      [{ action: 'update', collection: 'flags', recordId: 'a', changes: { is_enabled: true } }],
      () => client?.getFlag('a')?.is_enabled ?? 'no flag yet',
    )
    client = createFlagClient({ ...options(indexedDB), syncClient: outbox })
    await client.ready()
    expect(client.status().source).toBe('cache')
    await new Promise((resolve) => setTimeout(resolve, 20))
    // The first read began with the cached flag already answering (not yet edited).
    expect(reads[0]).toBe(false)
    expect(client.getFlag('a')?.is_enabled).toBe(true)
    await client.close()
  })

  it('does not write a set read from the cache back to it', async () => {
    const indexedDB = new IDBFactory()
    await cached(indexedDB, ['a'])
    const client = createFlagClient(options(indexedDB))
    await client.ready()
    await new Promise((resolve) => setTimeout(resolve, 120)) // past the 50 ms save debounce
    await client.close()
    const cache = new FlagCache('cold:flags', STREAM, { indexedDB, IDBKeyRange })
    expect((await cache.load())?.savedAt).toBe(7)
    cache.close()
  })

  it('an edit through enqueue shows at once, without waiting for a read of the outbox', async () => {
    const indexedDB = new IDBFactory()
    await cached(indexedDB, ['a', 'b'])
    const { outbox, reads } = memoryOutbox([], () => null)
    const client = createFlagClient({ ...options(indexedDB), syncClient: outbox })
    await client.ready()
    await new Promise((resolve) => setTimeout(resolve, 20))
    expect(reads.length).toBe(1)
    // From now on reads never finish: the edit must show from its id alone.
    outbox.outbox = () => new Promise(() => {})
    await client.updateFlag('b', { description: 'mine' })
    expect(client.getFlag('b')?.description).toBe('mine')
    await client.deleteFlag('a')
    expect(client.getFlag('a')).toBeUndefined()
  })
})
