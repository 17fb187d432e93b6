import type { Operation } from '@flagsync/protocol'
import { Dexie } from 'dexie'
import { IDBKeyRange } from 'fake-indexeddb'
import { HttpResponse } from 'msw'
import { afterEach, describe, expect, it } from 'vitest'
import { harness, ModelReceiver, status, useMockServer } from './helpers.js'

// The conflicts table on its own terms (a scripted receiver): the schema upgrade, 409s that are not conflicts,
// tabs sharing one outbox, and edits of a conflicted record cut into later batches.

const server = useMockServer()
let h = harness()

afterEach(async () => {
  await h.closeAll()
  h = harness()
})

const upd = (recordId: string, changes: Record<string, unknown>, baseRevision?: number): Operation => ({
  action: 'update',
  collection: 'flags',
  recordId,
  changes,
  ...(baseRevision === undefined ? {} : { baseRevision }),
})

/** A 409 as the receiver sends it, for operation `index` of the batch. */
const conflictAt = (index: number, recordId: string) =>
  status(409, {
    error: `operation ${index} conflicts`,
    code: 'conflict',
    conflicts: [
      {
        operationIndex: index,
        collection: 'flags',
        recordId,
        kind: 'field',
        fields: ['rollout_percentage'],
        base: { key: recordId, rollout_percentage: 1 },
        current: { key: recordId, rollout_percentage: 2 },
        currentRevision: 9,
        reason: 'rollout_percentage also changed after revision 4',
      },
    ],
  })

describe('schema version 3: the conflicts table', () => {
  it('opens a version 2 outbox with its queued operations and dead letters, and adds an empty conflicts table', async () => {
    const receiver = new ModelReceiver()
    server.use(receiver.handler)
    const old = new Dexie('flagsync', { indexedDB: h.indexedDB, IDBKeyRange })
    old.version(1).stores({
      ops: '++id',
      batches: '++seq, &batchId',
      tombstones: 'key',
      remoteRecords: 'key',
      lease: 'name',
      deadLetters: '++id, batchId',
    })
    old.version(2).stores({ remoteRecords: null, remoteKeys: '++id', remoteFilters: 'id' })
    await old.table('ops').bulkAdd([upd('a', { p: 1 }), upd('b', { p: 2 })].map((op) => ({ op, queuedAt: 1 })))
    await old.table('deadLetters').add({ batchId: 'old', operation: upd('z', {}), sources: [], error: {}, deadAt: 1 })
    old.close()

    const client = h.client()
    expect(await client.status()).toMatchObject({ pending: 2, conflicts: 0 })
    expect(await client.conflicts()).toEqual([])
    expect((await client.deadLetters()).map((d) => d.batchId)).toEqual(['old'])
    await client.flush()
    expect(receiver.sentOperations()).toEqual([upd('a', { p: 1 }), upd('b', { p: 2 })])
    await client.close()

    const raw = new Dexie('flagsync', { indexedDB: h.indexedDB, IDBKeyRange })
    await raw.open()
    try {
      expect(raw.verno).toBe(3)
      expect(raw.table('conflicts').schema.indexes.map((i) => i.name)).toEqual(['key'])
    } finally {
      raw.close()
    }
  })
})

describe('409 handling', () => {
  it('a 409 without a conflict body is an ordinary rejection: the batch stays, blocked', async () => {
    const receiver = new ModelReceiver()
    server.use(receiver.handler)
    receiver.reply(status(409, { error: 'no', code: 'something_else' }))
    const client = h.client()
    await client.update('flags', 'a', { p: 1 }, { baseRevision: 3 })
    await client.flush()
    expect(await client.status()).toMatchObject({
      state: 'blocked',
      conflicts: 0,
      lastError: { status: 409, code: 'something_else' },
    })
  })

  it('edits of the conflicted record queued while it was on the wire are held; the others go out', async () => {
    const receiver = new ModelReceiver()
    server.use(receiver.handler)
    const client = h.client({ batchSize: 1 })
    receiver.reply(async (request) => {
      await client.update('flags', 'x', { description: 'later' }, { baseRevision: 4 })
      await client.update('flags', 'z', { p: 1 })
      return conflictAt(0, 'x')(request)
    })
    await client.update('flags', 'x', { rollout_percentage: 5 }, { baseRevision: 4 })
    await client.update('flags', 'y', { p: 1 })
    expect(await client.flush()).toEqual({ delivered: 2, pending: 0 })
    expect(receiver.appliedOperations.map((op) => op.recordId)).toEqual(['y', 'z'])
    expect(await client.status()).toMatchObject({ conflicts: 1, pending: 0, state: 'idle' })
    // 'theirs' drops the conflicting edit and releases the later one, rebased on the current revision.
    const [conflict] = await client.conflicts()
    await client.resolve(conflict?.id as number, 'theirs')
    await client.flush()
    expect(receiver.appliedOperations.at(-1)).toEqual(upd('x', { description: 'later' }, 9))
  })

  it("'theirs' on a deleted record drops the edits held behind it (they could only be refused)", async () => {
    const receiver = new ModelReceiver({ strictUpdates: true })
    server.use(receiver.handler)
    const client = h.client()
    receiver.reply(async () => {
      await client.update('flags', 'x', { description: 'later' }, { baseRevision: 4 })
      return HttpResponse.json(
        {
          error: 'conflict',
          code: 'conflict',
          conflicts: [
            {
              operationIndex: 0,
              collection: 'flags',
              recordId: 'x',
              kind: 'deleted',
              fields: ['rollout_percentage'],
              base: { key: 'x' },
              current: null,
              currentRevision: null,
              reason: 'the record was deleted after revision 4',
            },
          ],
        },
        { status: 409 },
      )
    })
    await client.update('flags', 'x', { rollout_percentage: 5 }, { baseRevision: 4 })
    await client.flush()
    expect((await client.outbox()).map((e) => e.operation)).toEqual([upd('x', { description: 'later' }, 4)])
    const [conflict] = await client.conflicts()
    await client.resolve(conflict?.id as number, 'theirs')
    expect(await client.outbox()).toEqual([])
    expect(await client.flush()).toEqual({ delivered: 0, pending: 0 })
    expect(await client.status()).toMatchObject({ state: 'idle', conflicts: 0, lastError: null })
  })

  it('tabs share the conflicts: one resolves, the other is told it is gone', async () => {
    const receiver = new ModelReceiver()
    server.use(receiver.handler)
    receiver.reply(conflictAt(0, 'x'))
    const tab1 = h.client()
    const tab2 = h.client()
    await tab1.update('flags', 'x', { rollout_percentage: 5 }, { baseRevision: 4 })
    await tab1.flush()
    const [seen] = await tab2.conflicts()
    expect(seen).toMatchObject({ recordId: 'x', currentRevision: 9, mine: upd('x', { rollout_percentage: 5 }, 4) })
    await tab2.resolve(seen?.id as number, 'mine')
    await expect(tab1.resolve(seen?.id as number, 'theirs')).rejects.toMatchObject({ code: 'unknown_conflict' })
    await expect(tab1.resolve(1.5, 'theirs')).rejects.toMatchObject({ code: 'invalid_operation' })
    await expect(tab2.resolve(seen?.id as number, 'mine')).rejects.toMatchObject({ code: 'unknown_conflict' })
    await tab1.flush()
    expect(receiver.appliedOperations).toEqual([upd('x', { rollout_percentage: 5 }, 9)])
  })

  it('refuses a resolution that is not one, or a merged record that is not JSON, and keeps the conflict', async () => {
    const receiver = new ModelReceiver()
    server.use(receiver.handler)
    receiver.reply(conflictAt(0, 'x'))
    const client = h.client()
    await client.update('flags', 'x', { rollout_percentage: 5 }, { baseRevision: 4 })
    await client.flush()
    const [conflict] = await client.conflicts()
    const id = conflict?.id as number
    await expect(client.resolve(id, 'recreate')).rejects.toMatchObject({ code: 'invalid_resolution' })
    await expect(client.resolve(id, 'maybe' as never)).rejects.toMatchObject({ code: 'invalid_resolution' })
    await expect(client.resolve(id, { record: { when: 1n } as never })).rejects.toMatchObject({
      code: 'invalid_operation',
    })
    expect(await client.status()).toMatchObject({ conflicts: 1, pending: 0 })
    await client.resolve(id, { record: { key: 'x', rollout_percentage: 7, revision: 9 } })
    await client.flush()
    // The read-only revision is not written back; the merge goes on top of the current revision.
    expect(receiver.appliedOperations).toEqual([upd('x', { key: 'x', rollout_percentage: 7 }, 9)])
  })

  it('refuses a bad baseRevision at once, like any bad write', async () => {
    const client = h.client()
    await expect(client.update('flags', 'a', {}, { baseRevision: -1 })).rejects.toMatchObject({
      code: 'invalid_operation',
    })
    await expect(client.delete('flags', 'a', { baseRevision: 1.5 })).rejects.toMatchObject({
      code: 'invalid_operation',
    })
    expect(await client.pending()).toBe(0)
  })
})
