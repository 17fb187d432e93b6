import { createFlagClient, createSyncClient, type FlagClient, manualOnlineSource } from '@flagsync/sync-client'
import { startTestServer } from '@flagsync/test-support/test-server'
import { IDBFactory, IDBKeyRange } from 'fake-indexeddb'
import { afterEach, describe, expect, it } from 'vitest'

const closers: Array<() => Promise<void>> = []
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close()
})

describe('FlagClient.snapshot()', () => {
  it('is one immutable map per flag change: the same object across unrelated outbox changes, a new one per flags event', async () => {
    const server = await startTestServer()
    closers.push(() => server.dispose())
    await server.request('/api/flags', { method: 'POST', body: { key: 'a', is_enabled: true } })
    const indexedDB = new IDBFactory()
    const sync = createSyncClient({
      webhookUrl: `${server.url}/sync`,
      indexedDB,
      IDBKeyRange,
      online: manualOnlineSource(false),
      locks: null,
      broadcastChannel: null,
    })
    closers.push(() => sync.close())
    const flags: FlagClient = createFlagClient({
      streamUrl: `${server.url}/stream`,
      indexedDB,
      IDBKeyRange,
      syncClient: sync,
    })
    closers.push(() => flags.close())
    await flags.ready()
    const flagEvents: string[][] = []
    flags.subscribe((e) => {
      if (e.type === 'flags') flagEvents.push(e.changedKeys)
    })

    const first = flags.snapshot()
    expect(flags.snapshot()).toBe(first)
    expect([...first.keys()]).toEqual(['a'])

    // An operation of another collection: the outbox changed, the flags did not.
    await sync.insert('notes', { id: 'n1', text: 'hello' })
    await new Promise((r) => setTimeout(r, 100)) // the client re-reads the outbox on the sync client's notification
    expect(flags.snapshot()).toBe(first)
    expect(flagEvents).toEqual([])

    // A local edit of a flag: a new map, and the old one still reads as before.
    await flags.updateFlag('a', { is_enabled: false })
    const second = flags.snapshot()
    expect(second).not.toBe(first)
    expect(second.get('a')?.is_enabled).toBe(false)
    expect(first.get('a')?.is_enabled).toBe(true)
    expect(flagEvents).toEqual([['a']])

    // A change on the server arrives over the stream: another map.
    await server.request('/api/flags', { method: 'POST', body: { key: 'b', is_enabled: true } })
    await expect.poll(() => flags.snapshot().has('b')).toBe(true)
    expect(flags.snapshot()).not.toBe(second)
    expect(second.has('b')).toBe(false)
  })
})
