import type { Operation } from '@flagsync/protocol'
import { DIALECTS } from '@flagsync/test-support/databases'
import { startTestServer, type TestServer } from '@flagsync/test-support/test-server'
import { IDBFactory, IDBKeyRange } from 'fake-indexeddb'
import { afterEach, describe, expect, it } from 'vitest'
import { createDeliveryPipeline } from '../src/delivery-pipeline.js'
import { OutboxDb } from '../src/outbox-db.js'
import type { PipelineEvents } from '../src/pipeline-events.js'
import { resolveOptions } from '../src/resolve-options.js'

// The pipeline's 409 handling on its own: a real OutboxDb (fake-indexeddb) and the real flat API's receiver
// (listen(0)) on SQLite and PostgreSQL, no client facade, scheduling or lock.

describe.each(DIALECTS)('DeliveryPipeline and a 409 from the real receiver (%s)', (dialect) => {
  let server: TestServer
  const stores: OutboxDb[] = []
  afterEach(async () => {
    for (const store of stores.splice(0)) store.close()
    await server?.dispose()
  })

  function setup(batchSize: number) {
    const store = new OutboxDb(`pipeline-409-${Math.random()}`, { indexedDB: new IDBFactory(), IDBKeyRange })
    stores.push(store)
    const sent: Array<{ batchId: string; operations: Operation[]; status: number }> = []
    let ids = 0
    const o = resolveOptions({
      webhookUrl: `${server.url}/sync`,
      indexedDB: new IDBFactory(),
      IDBKeyRange,
      locks: null,
      broadcastChannel: null,
      batchSize,
      generateId: () => `batch-${++ids}`,
      fetch: async (url, init) => {
        const response = await fetch(url, init)
        sent.push({
          ...(JSON.parse(String(init?.body)) as { batchId: string; operations: Operation[] }),
          status: response.status,
        })
        return response
      },
    })
    const log: string[] = []
    const events: PipelineEvents = {
      attemptStarted: () => {},
      delivered: (batch) => log.push(`delivered ${batch.batchId}`),
      deadLettered: (error) => log.push(`dead-lettered ${error.batchId}`),
      failureRecorded: () => log.push('failure recorded'),
      conflicted: (count) => log.push(`conflicted ${count}`),
    }
    const pipeline = createDeliveryPipeline(store, o, new AbortController().signal, events)
    return { store, pipeline, sent, log, drain: () => pipeline.drain(async () => true, false) }
  }

  async function flag(key: string, fields: Record<string, unknown> = {}): Promise<number> {
    const res = await server.request('/api/flags', { method: 'POST', body: { key, is_enabled: false, ...fields } })
    return ((await res.json()) as { revision: number }).revision
  }
  const update = (recordId: string, changes: Record<string, unknown>, baseRevision?: number): Operation => ({
    action: 'update',
    collection: 'flags',
    recordId,
    changes,
    ...(baseRevision === undefined ? {} : { baseRevision }),
  })

  it('moves the conflicting operations aside and goes on with the rest, re-cut under a new batchId, in one drain', async () => {
    server = await startTestServer({ dialect })
    const base = await flag('x', { rollout_percentage: 5 })
    await flag('y')
    await flag('z')
    // Someone else changes x's rollout after our base.
    await server.request('/api/flags/x', { method: 'PATCH', body: { rollout_percentage: 50 } })
    const t = setup(3)
    await t.store.enqueue(update('y', { description: 'y1' }), 1)
    await t.store.enqueue(update('x', { rollout_percentage: 60 }, base), 2)
    await t.store.enqueue(update('z', { description: 'z1' }, base), 3)

    expect(await t.drain()).toEqual({ delivered: 2, waitUntil: null })
    expect(t.sent.map((s) => [s.batchId, s.status, s.operations.map((op) => op.recordId)])).toEqual([
      ['batch-1', 409, ['y', 'x', 'z']],
      ['batch-2', 200, ['y', 'z']],
    ])
    expect(t.log).toEqual(['conflicted 1', 'delivered batch-2'])
    const [conflict, ...rest] = await t.store.conflicts()
    expect(rest).toEqual([])
    expect(conflict).toMatchObject({
      recordId: 'x',
      kind: 'field',
      fields: ['rollout_percentage'],
      mine: update('x', { rollout_percentage: 60 }, base),
      base: expect.objectContaining({ rollout_percentage: 5 }),
      current: expect.objectContaining({ rollout_percentage: 50 }),
      batchId: 'batch-1',
    })
    expect(await t.store.snapshot()).toMatchObject({ head: undefined, pending: 0, conflicts: 1 })
    const x = (await (await server.request('/api/flags/x')).json()) as Record<string, unknown>
    expect(x.rollout_percentage).toBe(50)

    // A later edit of x is held: the next drain sends nothing.
    await t.store.enqueue(update('x', { description: 'held' }, base), 4)
    expect(await t.drain()).toEqual({ delivered: 0, waitUntil: null })
    expect(t.sent).toHaveLength(2)
    expect((await t.store.outbox()).map((e) => e.operation)).toEqual([update('x', { description: 'held' }, base)])
  })

  it('when every operation conflicts, the batch is gone and nothing else is sent', async () => {
    server = await startTestServer({ dialect })
    const base = await flag('gone')
    await server.request('/api/flags/gone', { method: 'DELETE' })
    const t = setup(10)
    await t.store.enqueue(update('gone', { rollout_percentage: 1 }, base), 1)
    expect(await t.drain()).toEqual({ delivered: 0, waitUntil: null })
    expect(t.sent.map((s) => s.status)).toEqual([409])
    expect((await t.store.conflicts()).map((c) => [c.recordId, c.kind, c.current])).toEqual([['gone', 'deleted', null]])
    expect(await t.store.snapshot()).toMatchObject({ head: undefined, pending: 0, conflicts: 1 })
  })
})
