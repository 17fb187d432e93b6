/**
 * The flag client with its default IndexedDB (none passed): impressions reach
 * the real service through its own /stream and ingest route, whether the
 * global scope has an IndexedDB (a browser, or `fake-indexeddb/auto` in Node)
 * or not (plain Node), and a queue that cannot be read is reported to the app
 * instead of swallowing every impression.
 */
import { createFlagClient, type FlagClient, type FlagClientEvent } from '@flagsync/flag-client'
import { IDBFactory, IDBKeyRange } from 'fake-indexeddb'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { type ImpressionFixture, startImpressionFixture } from '../../packages/flag-service/test/impressions/fixture.js'

type IdbGlobals = { indexedDB?: IDBFactory; IDBKeyRange?: typeof IDBKeyRange }
const g = globalThis as IdbGlobals

describe('impressions with the default IndexedDB options', () => {
  let f: ImpressionFixture
  const clients: FlagClient[] = []
  beforeEach(async () => {
    f = await startImpressionFixture('sqlite')
    const created = await f.h.call(`/api/environments/${f.envId}/flags`, {
      method: 'POST',
      as: f.h.admin,
      body: { key: 'checkout', is_enabled: true },
    })
    expect(created.status).toBe(200)
  })
  afterEach(async () => {
    for (const c of clients.splice(0)) await c.close()
    delete g.indexedDB
    delete g.IDBKeyRange
    await f?.dispose()
  })

  /** Default options but for a quick reconnect and a short flush window. */
  function client(extra: Partial<Parameters<typeof createFlagClient>[0]> = {}) {
    const c = createFlagClient({
      streamUrl: `${f.h.url}/stream`,
      sdkKey: f.h.defaultSdkKey,
      reconnect: { baseMs: 50, maxMs: 200 },
      impressions: { flushIntervalMs: 50 },
      ...extra,
    })
    clients.push(c)
    return c
  }
  const storedTotal = async () => (await f.list('limit=200')).body.total as number

  it('uses the global IndexedDB when there is one (as in a browser) and delivers', async () => {
    // What `import 'fake-indexeddb/auto'` does: the pair a browser has, installed after the client was imported.
    g.indexedDB = new IDBFactory()
    g.IDBKeyRange = IDBKeyRange
    const errors: FlagClientEvent[] = []
    const flags = client()
    flags.subscribe((event) => {
      if (event.type === 'error') errors.push(event)
    })
    await flags.ready()
    expect(flags.status().environmentId).toBe(f.envId)
    for (let i = 0; i < 3; i++) expect(flags.isEnabled('checkout', { user_id: `u${i}` })).toBe(true)
    await expect.poll(() => flags.impressionStatus().delivered, { timeout: 5000 }).toBe(3)
    expect(await storedTotal()).toBe(3)
    expect(flags.impressionStatus()).toMatchObject({ storage: 'indexeddb', lastError: null, dropped: 0 })
    expect(errors).toEqual([])
    // The queue really is the global IndexedDB's (and so is the flag cache).
    const names = (await g.indexedDB.databases()).map((d) => d.name)
    expect(names).toEqual(expect.arrayContaining(['flagsync:impressions', 'flagsync:flags']))
  })

  it('keeps impressions in memory where there is no IndexedDB (plain Node) and delivers', async () => {
    expect(g.indexedDB).toBeUndefined()
    const flags = client()
    await flags.ready()
    flags.isEnabled('checkout', { user_id: 'node-user' })
    await expect.poll(() => flags.impressionStatus().delivered, { timeout: 5000 }).toBe(1)
    expect(await storedTotal()).toBe(1)
    expect(flags.impressionStatus()).toMatchObject({ storage: 'memory', lastError: null })
  })

  it('reports an IndexedDB that cannot be opened (an error event and the status) and still delivers from memory', async () => {
    const refusing = new IDBFactory()
    refusing.open = () => {
      throw new DOMException('The user denied permission to access the database.', 'SecurityError')
    }
    const events: FlagClientEvent[] = []
    const flags = client({ indexedDB: refusing, IDBKeyRange, persist: false })
    flags.subscribe((event) => {
      if (event.type === 'error') events.push(event)
    })
    await flags.ready()
    for (let i = 0; i < 4; i++) flags.isEnabled('checkout', { user_id: `u${i}` })
    await expect.poll(() => flags.impressionStatus().delivered, { timeout: 5000 }).toBe(4)
    expect(await storedTotal()).toBe(4)
    expect(events).toEqual([
      {
        type: 'error',
        source: 'impressions',
        error: { message: expect.stringMatching(/could not read the impression queue.*in memory.*denied permission/) },
      },
    ])
    expect(flags.impressionStatus()).toMatchObject({ storage: 'memory', dropped: 0 })
  })

  it('refuses half an IndexedDB: a factory without its IDBKeyRange, or the other way round', () => {
    const streamUrl = `${f.h.url}/stream`
    expect(() => createFlagClient({ streamUrl, indexedDB: new IDBFactory() })).toThrow(
      /indexedDB and options.IDBKeyRange go together/,
    )
    expect(() => createFlagClient({ streamUrl, IDBKeyRange })).toThrow(/go together/)
  })
})
