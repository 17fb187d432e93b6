import { createSyncClient, type SyncClient } from '@flagsync/sync-client'
import { DIALECTS } from '@flagsync/test-support/databases'
import { IDBFactory, IDBKeyRange } from 'fake-indexeddb'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { type Caller, type Harness, headersFor, startHarness } from '../harness.js'
import { createProject, flagsOf, member, type Project, putFlag, storeRevision } from './support.js'

/**
 * The real sync client (IndexedDB outbox in fake-indexeddb, Node's fetch)
 * delivering to the service's per-environment receiver as a signed-in user:
 * what the dashboard does in the browser, minus the browser.
 */
describe.each(DIALECTS)('@flagsync/sync-client against POST …/sync on %s', (dialect) => {
  let h: Harness
  let p: Project
  let editor: { as: Caller; email: string }
  const clients: SyncClient[] = []
  const client = (environmentId: string, as: Caller) => {
    const c = createSyncClient({
      webhookUrl: `${h.url}/api/environments/${environmentId}/sync`,
      // The session cookie and the CSRF header, as a same-origin page sends them.
      headers: headersFor(as),
      actor: 'Ada on a train',
      indexedDB: new IDBFactory(),
      IDBKeyRange,
      pushDelayMs: null,
      locks: null,
      broadcastChannel: null,
    })
    clients.push(c)
    return c
  }

  beforeAll(async () => {
    h = await startHarness(dialect)
    p = await createProject(h)
    editor = await member(h, p.id, 'editor', 'editor')
  })
  afterEach(async () => {
    for (const c of clients.splice(0)) await c.close()
  })
  afterAll(async () => {
    await h?.dispose()
  })

  it('queued edits are delivered, applied and audited with the user as actor and the declared device', async () => {
    const sync = client(p.development, editor.as)
    await sync.insert('flags', { key: 'offline', is_enabled: false }, { recordId: 'offline' })
    await sync.update('flags', 'offline', { rollout_percentage: 40 })
    const flushed = await sync.flush()
    expect(flushed).toMatchObject({ delivered: expect.any(Number) })
    expect(await sync.pending()).toBe(0)
    expect((await flagsOf(h, p.development).get('offline')).body).toMatchObject({
      is_enabled: false,
      rollout_percentage: 40,
    })
    const history = await h.call(`/api/environments/${p.development}/flags/offline/history`, { as: editor.as })
    expect(history.body.entries[0]).toMatchObject({
      actor: { name: editor.email, verified: true },
      declaredActor: { name: 'Ada on a train', verified: false },
      source: { type: 'sync' },
    })
  })

  it('an edit based on an old revision that clashes lands in conflicts(), and resolving with mine applies it', async () => {
    await putFlag(h, p.development, { key: 'contested', is_enabled: false, rollout_percentage: 10 })
    const base = await storeRevision(h.server.runtime.knex, p.development, 'contested')
    const sync = client(p.development, editor.as)
    await sync.update('flags', 'contested', { rollout_percentage: 90 }, { baseRevision: base })
    // Someone else changes the same field before the edit is delivered.
    expect((await flagsOf(h, p.development).patch('contested', { rollout_percentage: 20 })).status).toBe(200)
    await sync.flush()
    const conflicts = await sync.conflicts()
    expect(conflicts).toHaveLength(1)
    expect(conflicts[0]).toMatchObject({ kind: 'field', fields: ['rollout_percentage'] })
    expect((await flagsOf(h, p.development).get('contested')).body.rollout_percentage).toBe(20)
    await sync.resolve(conflicts[0]?.id as number, 'mine')
    await sync.flush()
    expect(await sync.conflicts()).toEqual([])
    expect((await flagsOf(h, p.development).get('contested')).body.rollout_percentage).toBe(90)
  })
})
