import { IDBFactory, IDBKeyRange } from 'fake-indexeddb'
import { afterEach, describe, expect, it } from 'vitest'
import { FlagCache, STORAGE_LIMIT } from '../src/flag-cache.js'
import { createFlagClient, type KeyValueStorage, manualOnlineSource } from '../src/index.js'

const STREAM = 'http://flags.test/stream'
/** One copy per database name: no stream URL (nor the SDK key some put in it) in the entry's name. */
const KEY = 'cold:flags'
const flag = (key: string, description = '') => ({
  key,
  is_enabled: true,
  rollout_percentage: null,
  description,
  rules: [],
})

/** `localStorage` in memory, counting reads, refusing values over `quota` as browsers do. */
class MemoryStorage implements KeyValueStorage {
  readonly items = new Map<string, string>()
  reads = 0
  quota = Number.POSITIVE_INFINITY
  getItem(key: string): string | null {
    this.reads++
    return this.items.get(key) ?? null
  }
  setItem(key: string, value: string): void {
    if (value.length > this.quota) throw new DOMException('over quota', 'QuotaExceededError')
    this.items.set(key, value)
  }
  removeItem(key: string): void {
    this.items.delete(key)
  }
}

/** fake-indexeddb's factory, counting the databases opened through it. */
class CountingFactory extends IDBFactory {
  opened: string[] = []
  override open(name: string, version?: number) {
    this.opened.push(name)
    return super.open(name, version)
  }
}

const env = (indexedDB: IDBFactory) => ({ indexedDB, IDBKeyRange })
const clientOptions = (indexedDB: IDBFactory, localStorage: KeyValueStorage | null) => ({
  streamUrl: STREAM,
  dbName: 'cold',
  indexedDB,
  IDBKeyRange,
  localStorage,
  online: manualOnlineSource(false),
  impressions: false as const,
  fetch: () => Promise.reject(new Error('offline: no request expected')),
})

const restore: Array<() => void> = []
afterEach(() => {
  for (const undo of restore.splice(0)) undo()
})

/** Replaces a global for the test (`get` may throw, as `localStorage` does where storage is blocked). */
function setGlobal(name: string, get: () => unknown) {
  const before = Object.getOwnPropertyDescriptor(globalThis, name)
  Object.defineProperty(globalThis, name, { get, configurable: true })
  restore.push(() => {
    if (before) Object.defineProperty(globalThis, name, before)
    else delete (globalThis as Record<string, unknown>)[name]
  })
}

describe('the flag cache in localStorage', () => {
  it('answers while createFlagClient runs, from storage alone: IndexedDB is not opened', async () => {
    const storage = new MemoryStorage()
    const indexedDB = new CountingFactory()
    await new FlagCache('cold:flags', STREAM, env(indexedDB), storage).save([flag('a'), flag('b')], 'env-1', 7)
    expect(JSON.parse(storage.items.get(KEY) ?? 'null')).toMatchObject({ id: STREAM, environmentId: 'env-1' })
    indexedDB.opened = []

    const client = createFlagClient(clientOptions(indexedDB, storage))
    expect(client.getFlag('a')?.is_enabled).toBe(true)
    expect(client.status()).toMatchObject({ source: 'cache', environmentId: 'env-1' })
    await client.ready()
    expect(client.allFlags().map((f) => f.key)).toEqual(['a', 'b'])
    await client.close() // a set read from the cache is not written back
    expect(indexedDB.opened).toEqual([])
  })

  it(`keeps a set over ${STORAGE_LIMIT.toLocaleString('en')} characters in IndexedDB and removes the storage copy`, async () => {
    const storage = new MemoryStorage()
    const indexedDB = new IDBFactory()
    const cache = new FlagCache('cold:flags', STREAM, env(indexedDB), storage)
    await cache.save([flag('small')], null, 1)
    expect(storage.items.has(KEY)).toBe(true)

    const large = Array.from({ length: 1100 }, (_, i) => flag(`f${i}`, 'x'.repeat(1000)))
    await cache.save(large, null, 2)
    expect(storage.items.has(KEY)).toBe(false)

    const client = createFlagClient(clientOptions(indexedDB, storage))
    expect(client.status().source).toBe('none') // IndexedDB answers asynchronously
    await client.ready()
    expect(client.allFlags()).toHaveLength(1100)
    await client.close()
  })

  it('falls back to IndexedDB when the storage refuses the set (quota), removing the older copy', async () => {
    const storage = new MemoryStorage()
    const indexedDB = new IDBFactory()
    const cache = new FlagCache('cold:flags', STREAM, env(indexedDB), storage)
    await cache.save([flag('old')], null, 1)
    storage.quota = 10
    await cache.save([flag('new')], null, 2)
    expect(storage.items.has(KEY)).toBe(false)
    expect((await cache.load())?.flags.map((f) => f.key)).toEqual(['new'])
  })

  it('keeps every set in IndexedDB too, so clearing localStorage never brings back an older one (two tabs)', async () => {
    const storage = new MemoryStorage()
    const indexedDB = new IDBFactory()
    const tabA = new FlagCache('cold:flags', STREAM, env(indexedDB), storage)
    const tabB = new FlagCache('cold:flags', STREAM, env(indexedDB), storage)
    await tabA.save([flag('first')], null, 1)
    await tabB.save(
      Array.from({ length: 1100 }, (_, i) => flag(`large-${i}`, 'x'.repeat(1000))),
      null,
      2,
    )
    expect(storage.items.has(KEY)).toBe(false)
    await tabA.save([flag('newest')], null, 3)
    // The app clears its localStorage (a logout, say): IndexedDB answers with the newest set, not tab B's older one.
    storage.items.clear()
    expect(await new FlagCache('cold:flags', STREAM, env(indexedDB), storage).load()).toMatchObject({
      flags: [flag('newest')],
      savedAt: 3,
    })
    // And a client that stops using localStorage still has it.
    expect(await new FlagCache('cold:flags', STREAM, env(indexedDB), undefined).load()).toMatchObject({ savedAt: 3 })
  })

  it('holds one copy per database name: another stream URL replaces it and the first answers from IndexedDB', async () => {
    const storage = new MemoryStorage()
    const indexedDB = new IDBFactory()
    const other = 'http://flags.test/stream?sdk_key=sk_secret'
    await new FlagCache('cold:flags', STREAM, env(indexedDB), storage).save([flag('mine')], null, 1)
    await new FlagCache('cold:flags', other, env(indexedDB), storage).save([flag('theirs')], null, 2)
    expect([...storage.items.keys()]).toEqual([KEY])
    const mine = new FlagCache('cold:flags', STREAM, env(indexedDB), storage)
    expect(mine.loadNow()).toBeUndefined()
    expect((await mine.load())?.flags).toEqual([flag('mine')])
    expect(new FlagCache('cold:flags', other, env(indexedDB), storage).loadNow()?.flags).toEqual([flag('theirs')])
  })

  it('reads IndexedDB when the storage is blocked, damaged or holds another stream’s set', async () => {
    const indexedDB = new IDBFactory()
    await new FlagCache('cold:flags', STREAM, env(indexedDB), undefined).save([flag('from-idb')], null, 1)
    const blocked: KeyValueStorage = {
      getItem: () => {
        throw new DOMException('denied', 'SecurityError')
      },
      setItem: () => {},
      removeItem: () => {},
    }
    const entry = (flags: unknown) => {
      const storage = new MemoryStorage()
      storage.items.set(KEY, JSON.stringify({ id: STREAM, flags, environmentId: null, savedAt: 9 }))
      return storage
    }
    const damaged = new MemoryStorage()
    damaged.items.set(KEY, '{"id":')
    const other = new MemoryStorage()
    other.items.set(KEY, JSON.stringify({ id: 'http://other/stream', flags: [flag('other')] }))
    // Entries a script (or a bug) left broken: each must be passed over, not fail the client.
    const broken = [entry([null]), entry([42]), entry([{ key: 7 }]), entry('flags'), entry(undefined)]
    for (const storage of [blocked, damaged, other, ...broken]) {
      const client = createFlagClient(clientOptions(indexedDB, storage))
      await client.ready()
      expect(client.allFlags().map((f) => f.key)).toEqual(['from-idb'])
      await client.close()
    }
    for (const storage of [blocked, damaged, other]) {
      const cache = new FlagCache('cold:flags', STREAM, env(indexedDB), storage)
      expect(cache.loadNow()).toBeUndefined()
      expect((await cache.load())?.flags.map((f) => f.key)).toEqual(['from-idb'])
    }
  })

  it('keeps the set in a given storage alone where there is no IndexedDB', async () => {
    const storage = new MemoryStorage()
    const cache = new FlagCache('cold:flags', STREAM, undefined, storage)
    await cache.save([flag('a')], 'env-2', 3)
    expect(cache.loadNow()).toMatchObject({ flags: [flag('a')], environmentId: 'env-2', savedAt: 3 })
  })

  it('is off with persist: false or localStorage: null', async () => {
    const storage = new MemoryStorage()
    await new FlagCache('cold:flags', STREAM, undefined, storage).save([flag('a')], null, 1)
    storage.reads = 0
    for (const options of [
      { ...clientOptions(new IDBFactory(), storage), persist: false },
      clientOptions(new IDBFactory(), null),
    ]) {
      const client = createFlagClient(options)
      expect(client.status().source).toBe('none')
      await client.close()
    }
    expect(storage.reads).toBe(0)
  })
})

describe('the default storage', () => {
  it('is the page’s localStorage when the client uses the page’s IndexedDB', async () => {
    const storage = new MemoryStorage()
    await new FlagCache('cold:flags', STREAM, undefined, storage).save([flag('a')], null, 1)
    const indexedDB = new IDBFactory()
    setGlobal('localStorage', () => storage)
    setGlobal('indexedDB', () => indexedDB)
    setGlobal('IDBKeyRange', () => IDBKeyRange)
    const { indexedDB: _i, IDBKeyRange: _k, localStorage: _s, ...defaults } = clientOptions(indexedDB, null)
    const client = createFlagClient(defaults)
    expect(client.getFlag('a')).toBeDefined()
    await client.close()
  })

  it('is none when the client was given an IndexedDB of its own', async () => {
    const storage = new MemoryStorage()
    await new FlagCache('cold:flags', STREAM, undefined, storage).save([flag('a')], null, 1)
    storage.reads = 0
    setGlobal('localStorage', () => storage)
    const { localStorage: _s, ...options } = clientOptions(new IDBFactory(), null)
    const client = createFlagClient(options)
    await client.close()
    expect(storage.reads).toBe(0)
  })

  it('is none where the runtime has a localStorage but no IndexedDB (Deno, Node with web storage, happy-dom)', async () => {
    const storage = new MemoryStorage()
    await new FlagCache('cold:flags', STREAM, undefined, storage).save([flag('a')], null, 1)
    storage.reads = 0
    setGlobal('localStorage', () => storage)
    const { indexedDB: _i, IDBKeyRange: _k, localStorage: _s, ...defaults } = clientOptions(new IDBFactory(), null)
    const client = createFlagClient(defaults)
    expect(client.status().source).toBe('none')
    await client.close()
    expect(storage.reads).toBe(0)
  })

  it('is none, without an error, where reading localStorage throws (storage blocked)', async () => {
    const indexedDB = new IDBFactory()
    await new FlagCache('cold:flags', STREAM, env(indexedDB), undefined).save([flag('from-idb')], null, 1)
    setGlobal('localStorage', () => {
      throw new DOMException('The document is sandboxed', 'SecurityError')
    })
    setGlobal('indexedDB', () => indexedDB)
    setGlobal('IDBKeyRange', () => IDBKeyRange)
    const { indexedDB: _i, IDBKeyRange: _k, localStorage: _s, ...defaults } = clientOptions(indexedDB, null)
    const client = createFlagClient(defaults)
    await client.ready()
    expect(client.getFlag('from-idb')).toBeDefined()
    await client.close()
  })
})
