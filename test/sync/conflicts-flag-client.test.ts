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

// Two editors (each a flag client over its own sync client and IndexedDB) against the real flat API: the flag
// client bases every local edit on the revision it holds, and shows a conflicted flag as the server has it.

const closers: Array<() => Promise<void>> = []
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close()
})

describe('flag client: conflicts', () => {
  let server: TestServer

  async function editor(name: string) {
    const online = manualOnlineSource(false)
    const indexedDB = new IDBFactory()
    const bases: Array<number | undefined> = []
    const sync: SyncClient = createSyncClient({
      webhookUrl: `${server.url}/sync`,
      indexedDB,
      IDBKeyRange,
      online,
      locks: null,
      broadcastChannel: null,
      actor: name,
      fetch: async (url, init) => {
        const body = JSON.parse(String(init?.body)) as { operations: Array<{ baseRevision?: number }> }
        bases.push(...body.operations.map((op) => op.baseRevision))
        return fetch(url, init)
      },
    })
    closers.push(() => sync.close())
    const flags: FlagClient = createFlagClient({
      streamUrl: `${server.url}/stream`,
      persist: false,
      impressions: false,
      syncClient: sync,
    })
    closers.push(() => flags.close())
    await flags.ready()
    return { sync, flags, online, bases }
  }

  async function serverFlag(key: string) {
    return (await (await server.request(`/api/flags/${key}`)).json()) as Record<string, unknown>
  }

  it('edits carry the revision held; a conflicted flag reads as the server has it, with the conflict, until resolved', async () => {
    server = await startTestServer()
    closers.push(() => server.dispose())
    await server.request('/api/flags', { method: 'POST', body: { key: 'checkout', is_enabled: true } })
    const ann = await editor('Ann')
    const bob = await editor('Bob')
    const revision = ann.flags.getFlag('checkout')?.revision
    expect(revision).toEqual(expect.any(Number))

    // Both offline, both change the rollout; Bob also changes an unrelated field of another flag.
    await ann.flags.updateFlag('checkout', { rollout_percentage: 10 })
    await bob.flags.updateFlag('checkout', { rollout_percentage: 90 })
    expect(bob.flags.getFlag('checkout')).toMatchObject({ rollout_percentage: 90 })
    expect(bob.flags.getFlag('checkout')?.conflict).toBeUndefined()

    ann.online.setOnline(true)
    await ann.sync.flush()
    bob.online.setOnline(true)
    await bob.sync.flush()
    expect(ann.bases).toEqual([revision])
    expect(bob.bases).toEqual([revision])

    // Bob sees Ann's value (the server's) with his pending conflict attached.
    await expect.poll(() => bob.flags.getFlag('checkout')?.conflict?.fields).toEqual(['rollout_percentage'])
    await expect.poll(() => bob.flags.getFlag('checkout')?.rollout_percentage).toBe(10)
    expect(bob.flags.getFlag('checkout')?.conflict).toMatchObject({
      kind: 'field',
      mine: { changes: { rollout_percentage: 90 } },
      current: expect.objectContaining({ rollout_percentage: 10 }),
    })
    expect(bob.flags.getFlag('checkout')?.is_enabled).toBe(true)

    // Keep mine: the view shows it at once, the server gets it.
    const conflict = bob.flags.getFlag('checkout')?.conflict
    await bob.sync.resolve(conflict?.id as number, 'mine')
    await expect.poll(() => bob.flags.getFlag('checkout')?.conflict).toBeUndefined()
    expect(bob.flags.getFlag('checkout')?.rollout_percentage).toBe(90)
    await bob.sync.flush()
    expect(await serverFlag('checkout')).toMatchObject({ rollout_percentage: 90 })
    await expect.poll(() => ann.flags.getFlag('checkout')?.rollout_percentage).toBe(90)
  })

  it('edits of different fields merge without a conflict; a later edit is based on the echoed revision', async () => {
    server = await startTestServer()
    closers.push(() => server.dispose())
    await server.request('/api/flags', { method: 'POST', body: { key: 'f', is_enabled: false } })
    const ann = await editor('Ann')
    const bob = await editor('Bob')
    await ann.flags.updateFlag('f', { description: 'from Ann' })
    await bob.flags.updateFlag('f', { rollout_percentage: 25 })
    ann.online.setOnline(true)
    bob.online.setOnline(true)
    await ann.sync.flush()
    await bob.sync.flush()
    expect(await bob.sync.conflicts()).toEqual([])
    expect(await serverFlag('f')).toMatchObject({ description: 'from Ann', rollout_percentage: 25 })
    await expect.poll(() => bob.flags.getFlag('f')?.description).toBe('from Ann')
    const echoed = bob.flags.getFlag('f')?.revision
    await bob.flags.updateFlag('f', { rollout_percentage: 30 })
    await bob.sync.flush()
    expect(bob.bases.at(-1)).toBe(echoed)
    expect(await bob.sync.conflicts()).toEqual([])
  })

  it("two editors create the same key offline: the second is told it exists, with the first one's values", async () => {
    server = await startTestServer()
    closers.push(() => server.dispose())
    await server.request('/api/flags', { method: 'POST', body: { key: 'existing', is_enabled: true } })
    const ann = await editor('Ann')
    const bob = await editor('Bob')
    const newest = ann.flags.getFlag('existing')?.revision
    await ann.flags.createFlag({ key: 'fresh', is_enabled: true, description: 'Ann’s' })
    await bob.flags.createFlag({ key: 'fresh', is_enabled: false, description: 'Bob’s' })
    ann.online.setOnline(true)
    await ann.sync.flush()
    bob.online.setOnline(true)
    await bob.sync.flush()
    expect(bob.bases).toEqual([newest])
    expect(await serverFlag('fresh')).toMatchObject({ is_enabled: true, description: 'Ann’s' })
    await expect.poll(() => bob.flags.getFlag('fresh')?.conflict?.kind).toBe('exists')
    expect(bob.flags.getFlag('fresh')).toMatchObject({ is_enabled: true, description: 'Ann’s' })
    expect(bob.flags.getFlag('fresh')?.conflict?.fields.sort()).toEqual(['description', 'is_enabled'])
    await bob.sync.resolve(bob.flags.getFlag('fresh')?.conflict?.id as number, 'mine')
    await bob.sync.flush()
    expect(await serverFlag('fresh')).toMatchObject({ is_enabled: false, description: 'Bob’s' })
  })
})
