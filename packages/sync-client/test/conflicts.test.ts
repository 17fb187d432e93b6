import { DIALECTS } from '@flagsync/test-support/databases'
import { startTestServer, type TestServer } from '@flagsync/test-support/test-server'
import { IDBFactory, IDBKeyRange } from 'fake-indexeddb'
import { afterEach, describe, expect, it } from 'vitest'
import { createSyncClient, type SyncClient, SyncClientError, type SyncClientOptions } from '../src/index.js'

// Conflicts end to end on the client side: real outboxes (fake-indexeddb) delivering to the real flat API's
// receiver (listen(0)) on SQLite and PostgreSQL. Two editors are two outboxes with their own IndexedDB.

interface Sent {
  batchId: string
  operations: Array<{ recordId: string; baseRevision?: number }>
  status: number
}

describe.each(DIALECTS)('conflicts against the real receiver (%s)', (dialect) => {
  let server: TestServer
  const clients: SyncClient[] = []

  afterEach(async () => {
    await Promise.all(clients.splice(0).map((c) => c.close()))
    await server?.dispose()
  })

  async function start(): Promise<TestServer> {
    server = await startTestServer({ dialect })
    return server
  }

  /**
   * An editor: its own IndexedDB (or a given one, to reopen it), requests recorded. `withoutRevision`: its answers
   * lose their `revision`, as from a receiver that does not send one.
   */
  function editor(options: Partial<SyncClientOptions> & { indexedDB?: IDBFactory; withoutRevision?: boolean } = {}) {
    const sent: Sent[] = []
    const { withoutRevision, ...rest } = options
    const indexedDB = options.indexedDB ?? new IDBFactory()
    const client = createSyncClient({
      webhookUrl: `${server.url}/sync`,
      indexedDB,
      IDBKeyRange,
      locks: null,
      broadcastChannel: null,
      pushDelayMs: null,
      ...rest,
      fetch: async (url, init) => {
        const response = await fetch(url, init)
        sent.push({ ...(JSON.parse(String(init?.body)) as Omit<Sent, 'status'>), status: response.status })
        if (!withoutRevision || !response.ok) return response
        const { revision: _dropped, ...ack } = (await response.json()) as Record<string, unknown>
        return Response.json(ack, { status: response.status })
      },
    })
    clients.push(client)
    return { client, sent, indexedDB }
  }

  async function createFlag(key: string, fields: Record<string, unknown> = {}): Promise<number> {
    const res = await server.request('/api/flags', { method: 'POST', body: { key, is_enabled: false, ...fields } })
    expect(res.status).toBeLessThan(300)
    return ((await res.json()) as { revision: number }).revision
  }
  const flag = async (key: string) => {
    const res = await server.request(`/api/flags/${key}`)
    return res.status === 404 ? null : ((await res.json()) as Record<string, unknown>)
  }

  it("a merged record resolving an `exists` conflict goes on top of the other editor's flag, keeping the fields it leaves out", async () => {
    await start()
    const before = await createFlag('unrelated')
    await createFlag('shared', { rollout_percentage: 40, description: 'theirs' })
    const b = editor({ actor: 'Bob' })
    // Bob saw no flag "shared" at `before`, and creates his own: someone else created it meanwhile.
    await b.client.insert('flags', { key: 'shared', is_enabled: true }, { baseRevision: before })
    expect(await b.client.flush()).toMatchObject({ pending: 0 })
    const [conflict] = await b.client.conflicts()
    expect(conflict).toMatchObject({ kind: 'exists', mine: { action: 'insert' } })
    await b.client.resolve(conflict?.id as number, { record: { is_enabled: true } })
    expect(await b.client.flush()).toMatchObject({ pending: 0 })
    expect(b.sent.map((s) => s.status)).toEqual([409, 200])
    expect(await flag('shared')).toMatchObject({ is_enabled: true, rollout_percentage: 40, description: 'theirs' })
    expect(await b.client.conflicts()).toEqual([])
  })

  it('a 409 moves the conflicting edit aside, re-sends the rest under a new batchId, and holds later edits of the record', async () => {
    await start()
    const base = await createFlag('checkout')
    await createFlag('other')
    const a = editor({ actor: 'Ann' })
    const b = editor({ actor: 'Bob' })
    await a.client.update('flags', 'checkout', { rollout_percentage: 10 }, { baseRevision: base })
    await b.client.update('flags', 'checkout', { rollout_percentage: 20 }, { baseRevision: base })
    await b.client.update('flags', 'other', { description: 'unrelated' })
    expect(await a.client.flush()).toEqual({ delivered: 1, pending: 0 })

    expect(await b.client.flush()).toEqual({ delivered: 1, pending: 0 })
    expect(b.sent.map((s) => s.status)).toEqual([409, 200])
    const [refused, resent] = b.sent as [Sent, Sent]
    expect(resent.batchId).not.toBe(refused.batchId)
    expect(resent.operations.map((o) => o.recordId)).toEqual(['other'])
    expect((await flag('other'))?.description).toBe('unrelated')
    expect((await flag('checkout'))?.rollout_percentage).toBe(10)

    const [conflict, ...none] = await b.client.conflicts()
    expect(none).toEqual([])
    expect(conflict).toMatchObject({
      id: expect.any(Number),
      collection: 'flags',
      recordId: 'checkout',
      kind: 'field',
      fields: ['rollout_percentage'],
      mine: { action: 'update', changes: { rollout_percentage: 20 }, baseRevision: base },
      base: expect.objectContaining({ rollout_percentage: null }),
      current: expect.objectContaining({ rollout_percentage: 10 }),
      currentRevision: expect.any(Number),
      batchId: refused.batchId,
    })
    expect(await b.client.status()).toMatchObject({ conflicts: 1, pending: 0, lastError: null })

    // A later edit of the same flag waits with the conflict; an edit of another flag does not.
    await b.client.update('flags', 'checkout', { description: 'held' }, { baseRevision: base })
    await b.client.update('flags', 'other', { is_enabled: true })
    expect(await b.client.flush()).toEqual({ delivered: 1, pending: 0 })
    expect((await flag('checkout'))?.description).toBeNull()
    expect((await flag('other'))?.is_enabled).toBe(true)
    expect((await b.client.outbox()).map((e) => e.operation.recordId)).toEqual(['checkout'])

    // Keep mine: sent on top of the current revision, then the held edit follows.
    await b.client.resolve(conflict?.id as number, 'mine')
    expect(await b.client.status()).toMatchObject({ conflicts: 0 })
    expect(await b.client.flush()).toMatchObject({ pending: 0 })
    expect(b.sent.at(-1)?.operations[0]?.baseRevision).toBe(conflict?.currentRevision)
    expect(await flag('checkout')).toMatchObject({ rollout_percentage: 20, description: 'held' })
    expect(await b.client.conflicts()).toEqual([])
    const history = (await (await server.request('/api/flags/checkout/history')).json()) as {
      entries: Array<{ declaredActor: { name: string } | null; changedFields: string[] }>
    }
    // The resolution and the held edit went out together (compacted into one operation).
    expect(history.entries.map((e) => [e.declaredActor?.name ?? null, e.changedFields])).toEqual([
      ['Bob', ['rollout_percentage', 'description']],
      ['Ann', ['rollout_percentage']],
      [null, expect.any(Array)],
    ])
  })

  it("'theirs' drops my edit; a merged record is sent on top of theirs; the conflicts survive a reload", async () => {
    await start()
    const base = await createFlag('f', { description: 'start' })
    const a = editor()
    const b = editor()
    await a.client.update('flags', 'f', { rollout_percentage: 10, description: 'ann' }, { baseRevision: base })
    await a.client.flush()
    await b.client.update('flags', 'f', { rollout_percentage: 20 }, { baseRevision: base })
    await b.client.flush()
    // A reload: a new client on the same IndexedDB still has the conflict.
    await b.client.close()
    const reopened = editor({ indexedDB: b.indexedDB })
    const [conflict] = await reopened.client.conflicts()
    expect(conflict?.fields).toEqual(['rollout_percentage'])
    await reopened.client.resolve(conflict?.id as number, 'theirs')
    expect(await reopened.client.flush()).toEqual({ delivered: 0, pending: 0 })
    expect(reopened.sent).toEqual([])
    expect(await flag('f')).toMatchObject({ rollout_percentage: 10, description: 'ann' })
    await expect(reopened.client.resolve(conflict?.id as number, 'theirs')).rejects.toMatchObject({
      code: 'unknown_conflict',
    })

    // Again, resolved with a merge this time.
    const now = (await flag('f'))?.revision as number
    await a.client.update('flags', 'f', { rollout_percentage: 30 }, { baseRevision: now })
    await a.client.flush()
    await reopened.client.update('flags', 'f', { rollout_percentage: 40 }, { baseRevision: now })
    await reopened.client.flush()
    const [second] = await reopened.client.conflicts()
    await reopened.client.resolve(second?.id as number, {
      record: { ...(second?.current ?? {}), rollout_percentage: 35 },
    })
    await reopened.client.flush()
    expect(await flag('f')).toMatchObject({ rollout_percentage: 35, description: 'ann' })
  })

  it("a deleted flag: 'mine' is refused, 're-create' brings it back with my changes", async () => {
    await start()
    const base = await createFlag('gone', { description: 'was here', rollout_percentage: 5 })
    const a = editor()
    const b = editor()
    await a.client.delete('flags', 'gone', { baseRevision: base })
    await a.client.flush()
    await b.client.update('flags', 'gone', { rollout_percentage: 50 }, { baseRevision: base })
    await b.client.flush()
    const [conflict] = await b.client.conflicts()
    expect(conflict).toMatchObject({ kind: 'deleted', current: null, currentRevision: null })
    const refused = await b.client.resolve(conflict?.id as number, 'mine').catch((e: unknown) => e)
    expect(refused).toBeInstanceOf(SyncClientError)
    expect(refused).toMatchObject({ code: 'invalid_resolution' })
    expect(await b.client.conflicts()).toHaveLength(1)
    await b.client.resolve(conflict?.id as number, 'recreate')
    await b.client.flush()
    expect(await flag('gone')).toMatchObject({ description: 'was here', rollout_percentage: 50 })
  })

  it('two quick edits of one field in two batches are not a conflict with myself', async () => {
    await start()
    const base = await createFlag('mine')
    const a = editor()
    await a.client.update('flags', 'mine', { rollout_percentage: 10 }, { baseRevision: base })
    await a.client.flush()
    // The stream has not echoed the first edit yet: the second is still based on the old revision.
    await a.client.update('flags', 'mine', { rollout_percentage: 20 }, { baseRevision: base })
    await a.client.flush()
    expect(a.sent.map((s) => s.status)).toEqual([200, 200])
    expect(await a.client.conflicts()).toEqual([])
    expect((await flag('mine'))?.rollout_percentage).toBe(20)
  })

  it("an edit on a base its own delivery superseded still conflicts with someone else's change since", async () => {
    await start()
    const base = await createFlag('shared')
    const a = editor()
    await a.client.update('flags', 'shared', { rollout_percentage: 10 }, { baseRevision: base })
    await a.client.flush()
    const theirs = await server.request('/api/flags/shared', { method: 'PATCH', body: { rollout_percentage: 30 } })
    expect(theirs.status).toBe(200)
    // The stream has not echoed the first edit: the next one is based on the revision before it.
    await a.client.update('flags', 'shared', { rollout_percentage: 20, description: 'mine' }, { baseRevision: base })
    await a.client.flush()
    expect(a.sent.map((s) => s.status)).toEqual([200, 409])
    // Checked from the revision the first delivery was acknowledged with, not sent without a base.
    expect(a.sent[1]?.operations[0]?.baseRevision).toBe(base + 1)
    const [conflict] = await a.client.conflicts()
    expect(conflict).toMatchObject({ recordId: 'shared', fields: ['rollout_percentage'] })
    expect(conflict?.base).toMatchObject({ rollout_percentage: 10 })
    expect(conflict?.current).toMatchObject({ rollout_percentage: 30 })
    expect((await flag('shared'))?.rollout_percentage).toBe(30)
  })

  it('without a revision in the answer, an edit on a base its own delivery superseded goes out without one', async () => {
    await start()
    const base = await createFlag('unacked')
    const a = editor({ withoutRevision: true })
    await a.client.update('flags', 'unacked', { rollout_percentage: 10 }, { baseRevision: base })
    await a.client.flush()
    await a.client.update('flags', 'unacked', { rollout_percentage: 20 }, { baseRevision: base })
    await a.client.flush()
    // Sent with its base, the edit would conflict with this client's own delivery.
    expect(a.sent.map((s) => [s.status, s.operations[0]?.baseRevision])).toEqual([
      [200, base],
      [200, undefined],
    ])
    expect((await flag('unacked'))?.rollout_percentage).toBe(20)
  })

  it('an edit cut while its record is on the wire goes out without its base, as no revision is known yet', async () => {
    await start()
    const base = await createFlag('on-wire')
    const a = editor({ batchSize: 2 })
    await a.client.update('flags', 'on-wire', { rollout_percentage: 10 }, { baseRevision: base })
    // 199 updates of another record: they fill the first cut's window (200 rows) as one operation, so the second
    // edit of `on-wire` lands in the batch cut while the first is on the wire.
    await a.client.insert('flags', { key: 'filler', is_enabled: false })
    for (let i = 1; i < 199; i++) await a.client.update('flags', 'filler', { rollout_percentage: i % 100 })
    await a.client.update('flags', 'on-wire', { rollout_percentage: 20 }, { baseRevision: base })
    await a.client.flush()
    expect(a.sent.map((s) => [s.status, s.operations.map((op) => [op.recordId, op.baseRevision])])).toEqual([
      [
        200,
        [
          ['on-wire', base],
          ['filler', undefined],
        ],
      ],
      [200, [['on-wire', undefined]]],
    ])
    expect((await flag('on-wire'))?.rollout_percentage).toBe(20)
  })

  it('resolving works offline: the resolution is queued and delivered once online', async () => {
    await start()
    const base = await createFlag('f')
    const a = editor()
    let online = true
    const b = editor({ online: { isOnline: () => online, subscribe: () => () => {} } })
    await a.client.update('flags', 'f', { is_enabled: true }, { baseRevision: base })
    await a.client.flush()
    await b.client.update('flags', 'f', { is_enabled: false, description: 'b' }, { baseRevision: base })
    await b.client.flush()
    online = false
    const [conflict] = await b.client.conflicts()
    await b.client.resolve(conflict?.id as number, 'mine')
    expect(await b.client.status()).toMatchObject({ state: 'offline', pending: 1, conflicts: 0 })
    online = true
    await b.client.flush()
    expect(await flag('f')).toMatchObject({ is_enabled: false, description: 'b' })
  })
})
