import type { Operation } from '@flagsync/protocol'
import { IDBFactory, IDBKeyRange } from 'fake-indexeddb'
import { afterEach, describe, expect, it } from 'vitest'
import { createDeliveryPipeline } from '../src/delivery-pipeline.js'
import { loadLazyOps } from '../src/lazy.js'
import { OutboxDb } from '../src/outbox-db.js'
import type { PipelineEvents } from '../src/pipeline-events.js'
import { resolveOptions } from '../src/resolve-options.js'
import type { DeliveryError, DeliveryInfo } from '../src/types.js'

// The pipeline on its own (no client, scheduling or lock): a real OutboxDb on fake-indexeddb and a fetch that
// answers from a script, so each step (cut ahead, send, acknowledge, back off) is checked where it happens.

interface Sent {
  batchId: string
  operations: Operation[]
}

type Reply = (sent: Sent) => Response | Promise<Response>

const ok = (): Response => Response.json({ applied: 1 })

function setup(options: { batchSize?: number; deadLetter?: boolean; online?: () => boolean } = {}) {
  const store = new OutboxDb(`pipeline-${Math.random()}`, { indexedDB: new IDBFactory(), IDBKeyRange })
  const sent: Sent[] = []
  const replies: Reply[] = []
  let onWire = 0
  let maxOnWire = 0
  let ids = 0
  const fetch = (async (_url: string, init: RequestInit) => {
    const body = JSON.parse(String(init.body)) as Sent
    sent.push(body)
    onWire++
    maxOnWire = Math.max(maxOnWire, onWire)
    try {
      return await (replies.shift() ?? ok)(body)
    } finally {
      onWire--
    }
  }) as typeof globalThis.fetch
  const o = resolveOptions({
    webhookUrl: 'https://receiver.test/sync',
    indexedDB: new IDBFactory(),
    IDBKeyRange,
    fetch,
    locks: null,
    broadcastChannel: null,
    online: { isOnline: options.online ?? (() => true), subscribe: () => () => {} },
    batchSize: options.batchSize ?? 2,
    deadLetter: options.deadLetter,
    generateId: () => `batch-${++ids}`,
    random: () => 0.5,
  })
  const log: string[] = []
  const delivered: Array<{ batchId: string; operations: Operation[]; info: DeliveryInfo }> = []
  const deadLettered: DeliveryError[] = []
  const events: PipelineEvents = {
    attemptStarted: () => log.push(`attempt ${pipeline.attempting}`),
    delivered: (batch, info) => {
      log.push(`delivered ${batch.batchId}`)
      delivered.push({ batchId: batch.batchId, operations: batch.operations, info })
    },
    deadLettered: (error) => {
      log.push(`dead-lettered ${error.batchId}`)
      deadLettered.push(error)
    },
    failureRecorded: () => log.push('failure recorded'),
  }
  const shutdown = new AbortController()
  const pipeline = createDeliveryPipeline(store, o, shutdown.signal, events)
  const keepAlive = async () => true
  stores.push(store)
  return {
    store,
    pipeline,
    sent,
    replies,
    log,
    delivered,
    deadLettered,
    shutdown,
    keepAlive,
    maxOnWire: () => maxOnWire,
    queue: async (...keys: string[]) => {
      for (const key of keys) {
        await store.enqueue({ action: 'update', collection: 'flags', recordId: key, changes: { n: 1 } }, Date.now())
      }
    },
  }
}

const stores: OutboxDb[] = []
afterEach(() => {
  for (const store of stores.splice(0)) store.close()
})

const keysOf = (s: { operations: Operation[] }) => s.operations.map((op) => op.recordId)

describe('DeliveryPipeline.drain', () => {
  it('delivers the queue in batches, one request at a time, recording each acknowledgement in order', async () => {
    const t = setup({ batchSize: 2 })
    await t.queue('a', 'b', 'c', 'd', 'e')
    const result = await t.pipeline.drain(t.keepAlive, false)
    expect(result).toEqual({ delivered: 5, waitUntil: null })
    expect(t.sent.map(keysOf)).toEqual([['a', 'b'], ['c', 'd'], ['e']])
    expect(t.maxOnWire()).toBe(1)
    expect(t.delivered.map((d) => [d.batchId, keysOf(d), d.info.duplicate])).toEqual([
      ['batch-1', ['a', 'b'], false],
      ['batch-2', ['c', 'd'], false],
      ['batch-3', ['e'], false],
    ])
    // Every acknowledgement is recorded by the time drain resolves: the outbox is empty.
    expect(await t.store.snapshot()).toEqual({ head: undefined, pending: 0, conflicts: 0 })
    expect(t.pipeline.attempting).toBe(false)
    expect(t.pipeline.currentAttempt).toBe(null)
  })

  it('cuts the next batch while one is on the wire, and sends it only after the acknowledgement', async () => {
    const t = setup({ batchSize: 2 })
    await t.queue('a', 'b', 'c')
    let release = () => {}
    const held = new Promise<void>((resolve) => {
      release = resolve
    })
    let cutWhileOnWire: Array<string | null> = []
    t.replies.push(async () => {
      // While batch-1 is out, batch-2 is already cut and persisted under its own batchId.
      for (let i = 0; i < 50 && !cutWhileOnWire.includes('batch-2'); i++) {
        cutWhileOnWire = (await t.store.outbox()).map((e) => e.batchId)
      }
      await held
      return ok()
    })
    const drained = t.pipeline.drain(t.keepAlive, false)
    for (let i = 0; i < 100 && !cutWhileOnWire.includes('batch-2'); i++) await new Promise((r) => setTimeout(r, 5))
    expect(cutWhileOnWire).toEqual(['batch-1', 'batch-1', 'batch-2'])
    expect(t.sent).toHaveLength(1)
    expect(t.pipeline.attempting).toBe(true)
    expect(t.pipeline.currentAttempt).not.toBe(null)
    release()
    expect(await drained).toEqual({ delivered: 3, waitUntil: null })
    expect(t.sent.map((s) => s.batchId)).toEqual(['batch-1', 'batch-2'])
  })

  it('tells its client an attempt started (attempting already true) before each request, and each delivery after it', async () => {
    const t = setup({ batchSize: 1 })
    await t.queue('a', 'b')
    await t.pipeline.drain(t.keepAlive, false)
    expect(t.log).toEqual(['attempt true', 'attempt true', 'delivered batch-1', 'delivered batch-2'])
  })

  it('backs off after a failure: stops, records the wait, keeps the batch and the cut ahead for the retry', async () => {
    const t = setup({ batchSize: 1 })
    await t.queue('a', 'b')
    t.replies.push(() => new Response('busy', { status: 503, headers: { 'Retry-After': '120' } }))
    const before = Date.now()
    const first = await t.pipeline.drain(t.keepAlive, false)
    expect(first.delivered).toBe(0)
    expect(first.waitUntil).toBeGreaterThanOrEqual(before + 120_000)
    expect(t.log).toEqual(['attempt true', 'failure recorded'])
    const { head, pending } = await t.store.snapshot()
    expect(pending).toBe(2)
    expect(head?.batchId).toBe('batch-1')
    expect(head?.attempts).toBe(1)
    expect(head?.lastError).toMatchObject({ kind: 'transient', status: 503 })
    expect(head?.nextAttemptAt).toBe(first.waitUntil)

    // Not due yet: a background drain sends nothing and says when it is.
    expect(await t.pipeline.drain(t.keepAlive, false)).toEqual({ delivered: 0, waitUntil: first.waitUntil })
    expect(t.sent).toHaveLength(1)
    // Forced (flush): the same batch under the same batchId, then the rest.
    expect(await t.pipeline.drain(t.keepAlive, true)).toEqual({ delivered: 2, waitUntil: null })
    expect(t.sent.map((s) => [s.batchId, ...keysOf(s)])).toEqual([
      ['batch-1', 'a'],
      ['batch-1', 'a'],
      ['batch-2', 'b'],
    ])
  })

  it('moves a rejected batch to the dead letters and goes on with the rest', async () => {
    const t = setup({ batchSize: 1, deadLetter: true })
    await t.queue('poison', 'fine')
    t.replies.push(() =>
      Response.json({ error: 'invalid changes', code: 'validation_failed', operationIndex: 0 }, { status: 422 }),
    )
    expect(await t.pipeline.drain(t.keepAlive, false)).toEqual({ delivered: 1, waitUntil: null })
    expect(t.deadLettered).toHaveLength(1)
    expect(t.deadLettered[0]).toMatchObject({ kind: 'rejected', status: 422, batchId: 'batch-1', operationIndex: 0 })
    expect(t.deadLettered[0]?.outboxIds).toEqual([1])
    // The batch cut ahead (batch-2) never left: after the dead letter the queue is cut again from its head.
    expect(t.log).toEqual(['attempt true', 'dead-lettered batch-1', 'attempt true', 'delivered batch-3'])
    expect(t.sent.map((s) => [s.batchId, ...keysOf(s)])).toEqual([
      ['batch-1', 'poison'],
      ['batch-3', 'fine'],
    ])
    expect((await (await loadLazyOps()).deadLetters(t.store.db)).map((d) => d.operation.recordId)).toEqual(['poison'])
  })

  it('reports a replayed batch the receiver answers as a duplicate', async () => {
    const t = setup()
    await t.queue('a')
    t.replies.push(() => Response.json({ batchId: 'batch-1', applied: 0, duplicate: true }))
    await t.pipeline.drain(t.keepAlive, false)
    expect(t.delivered.map((d) => d.info)).toEqual([{ duplicate: true }])
  })

  it('sends nothing when the lock cannot be kept, offline or after abort, and leaves the batch unsent', async () => {
    let online = true
    const t = setup({ online: () => online })
    await t.queue('a')
    expect(await t.pipeline.drain(async () => false, false)).toEqual({ delivered: 0, waitUntil: null })
    online = false
    expect(await t.pipeline.drain(t.keepAlive, true)).toEqual({ delivered: 0, waitUntil: null })
    online = true
    t.shutdown.abort()
    expect(await t.pipeline.drain(t.keepAlive, true)).toEqual({ delivered: 0, waitUntil: null })
    expect(t.sent).toEqual([])
    expect(t.log).toEqual([])
    // Cut, but released unsent: its operations can still be discarded.
    const [entry] = await t.store.outbox()
    expect(await (await loadLazyOps()).discard(t.store.db, [entry?.id as number], Date.now())).toBe(1)
  })

  it('an aborted request is no answer: nothing is recorded and the batch goes out again under its batchId', async () => {
    const t = setup()
    await t.queue('a')
    t.replies.push(() => {
      t.shutdown.abort()
      return new Promise<Response>(() => {})
    })
    expect(await t.pipeline.drain(t.keepAlive, false)).toEqual({ delivered: 0, waitUntil: null })
    expect(t.log).toEqual(['attempt true'])
    const { head } = await t.store.snapshot()
    expect(head?.batchId).toBe('batch-1')
    expect(head?.attempts).toBe(0)
  })
})
