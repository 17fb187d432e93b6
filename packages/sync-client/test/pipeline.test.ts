import type { Operation } from '@flagsync/protocol'
import { Dexie } from 'dexie'
import { IDBFactory, IDBKeyRange } from 'fake-indexeddb'
import fc from 'fast-check'
import { HttpResponse } from 'msw'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { SyncClientError } from '../src/index.js'
import { type BatchRow, EMPTY_VIEW, OutboxDb } from '../src/outbox-db.js'
import { addRemoteRows } from '../src/remote-records.js'
import {
  harness,
  ManualClock,
  ModelReceiver,
  modelState,
  type Received,
  settle,
  status,
  until,
  useMockServer,
} from './helpers.js'

// Delivery is pipelined: while a batch is on the wire the next one is cut and persisted, and an acknowledgement
// is recorded while the next request runs. These tests hold the guarantees that must survive that.

const server = useMockServer()
let h = harness()
afterEach(async () => {
  await h.closeAll()
  h = harness()
})

/** A receiver that holds every request until `release()`; counts requests on the wire at once. */
function gatedReceiver() {
  const r = new ModelReceiver()
  server.use(r.handler)
  const gates: (() => void)[] = []
  let inFlight = 0
  const stats = { maxInFlight: 0 }
  const held = async (q: Received): Promise<Response> => {
    inFlight++
    stats.maxInFlight = Math.max(stats.maxInFlight, inFlight)
    await new Promise<void>((resolve) => gates.push(resolve))
    inFlight--
    r.reply(held)
    return r.apply(q)
  }
  r.reply(held)
  return {
    r,
    stats,
    waiting: () => gates.length,
    release: () => gates.shift()?.(),
  }
}

/** Like `until`, for a condition that reads IndexedDB. */
async function eventually(condition: () => Promise<boolean>, what: string): Promise<void> {
  for (let i = 0; i < 500; i++) {
    if (await condition()) return
    await settle(2)
  }
  throw new Error(`timed out waiting for ${what}`)
}

/** Answers held requests one by one until `done()` (at most `limit` of them). */
async function releaseUntil(g: ReturnType<typeof gatedReceiver>, done: () => boolean, limit = 20): Promise<void> {
  for (let i = 0; i < limit && !done(); i++) {
    g.release()
    await settle()
  }
}

const ids = (n: number, prefix = 'r') => Array.from({ length: n }, (_, i) => `${prefix}${i}`)

/** The batchId each queued operation is in (null: not cut yet), by recordId. */
async function cutState(client: ReturnType<typeof h.client>): Promise<Map<string, string | null>> {
  return new Map((await client.outbox()).map((e) => [e.operation.recordId, e.batchId]))
}

describe('pipelined delivery', () => {
  it('cuts the next batch while one is on the wire, but sends it only after the acknowledgement', async () => {
    const g = gatedReceiver()
    const client = h.client({ batchSize: 2 })
    for (const id of ids(5)) await client.update('c', id, { v: id })
    const flushing = client.flush()

    await until(() => g.waiting() === 1, 'first request')
    await until(() => g.r.requests.length === 1 && g.waiting() === 1, 'first request held')
    const cut = await cutState(client)
    const [first, second] = [cut.get('r0'), cut.get('r2')]
    expect(first).toBe(g.r.requests[0]?.batchId)
    expect(second).toEqual(expect.any(String)) // the next batch is cut and persisted already…
    expect(second).not.toBe(first)
    expect(cut.get('r4')).toBeNull() // …and only that one
    await settle()
    expect(g.r.requests).toHaveLength(1) // …but not sent

    for (let i = 0; i < 3; i++) {
      g.release()
      if (i < 2) await until(() => g.waiting() === 1, `request ${i + 2}`)
    }
    expect(await flushing).toEqual({ delivered: 5, pending: 0 })
    expect(g.stats.maxInFlight).toBe(1)
    expect(g.r.requests.map((q) => q.batchId).slice(0, 2)).toEqual([first, second])
    expect(g.r.sentOperations().map((op) => op.recordId)).toEqual(ids(5))
  })

  it('reports each acknowledged batch once, in order, and every acknowledgement is recorded when flush resolves', async () => {
    const r = new ModelReceiver()
    server.use(r.handler)
    const client = h.client({ batchSize: 3 })
    const delivered: string[][] = []
    client.onDelivered((_batchId, operations) => delivered.push(operations.map((op) => op.recordId)))
    for (const id of ids(10)) await client.insert('c', { v: id }, { recordId: id })
    expect(await client.flush()).toEqual({ delivered: 10, pending: 0 })
    expect(delivered).toEqual([['r0', 'r1', 'r2'], ['r3', 'r4', 'r5'], ['r6', 'r7', 'r8'], ['r9']])
    expect(await client.outbox()).toEqual([])
    // Every insert was recorded as delivered: insert … delete of one of them still sends the delete.
    await client.insert('c', { v: 'again' }, { recordId: 'r9' })
    await client.delete('c', 'r9')
    await client.flush()
    expect(r.requests.at(-1)?.operations).toEqual([{ action: 'delete', collection: 'c', recordId: 'r9' }])
  })

  it('an insert in the batch on the wire is taken as existing when the next batch is cut', async () => {
    const g = gatedReceiver()
    const client = h.client({ batchSize: 1 })
    await client.insert('c', { a: 1 }, { recordId: 'x' })
    await client.update('c', 'other', { v: 1 })
    const flushing = client.flush()
    await until(() => g.waiting() === 1, 'the insert on the wire')
    // Queued while the insert is on the wire: cut after it, when the insert is not recorded as delivered yet.
    await client.insert('c', { a: 2 }, { recordId: 'x' })
    await client.delete('c', 'x')
    let finished = false
    void flushing.then(() => {
      finished = true
    })
    await releaseUntil(g, () => finished)
    expect(await flushing).toEqual({ delivered: 3, pending: 0 })
    expect(g.r.sentOperations().map((op) => [op.recordId, op.action])).toEqual([
      ['x', 'insert'],
      ['other', 'update'],
      ['x', 'delete'],
    ])
    expect(g.r.records.has('c/x')).toBe(false)
  })

  it('after a failure, the batch cut ahead goes out after the retry, unchanged, and each batch is applied once', async () => {
    const r = new ModelReceiver()
    server.use(r.handler)
    r.reply(status(503))
    const client = h.client({ batchSize: 2 })
    for (const id of ids(4)) await client.update('c', id, { v: id })
    await client.flush()
    const ahead = (await cutState(client)).get('r2')
    expect(ahead).toEqual(expect.any(String))
    expect(await client.flush()).toEqual({ delivered: 4, pending: 0 })
    const [failed, retry, next] = r.requests
    expect(retry?.batchId).toBe(failed?.batchId)
    expect(next?.batchId).toBe(ahead)
    expect(next?.operations.map((op) => op.recordId)).toEqual(['r2', 'r3'])
    expect(r.appliedBatches).toEqual([failed?.batchId, ahead])
  })

  it('after a failure, operations of the batch cut ahead (never sent) can be discarded; the rest is cut again', async () => {
    const r = new ModelReceiver()
    server.use(r.handler)
    r.reply(status(503))
    const client = h.client({ batchSize: 2 })
    for (const id of ids(4)) await client.update('c', id, { v: id })
    await client.flush()
    const entries = await client.outbox()
    const ahead = entries.find((e) => e.operation.recordId === 'r2')
    expect(ahead?.batchId).toEqual(expect.any(String))
    expect(await client.discard([ahead?.id ?? -1])).toBe(1)
    expect((await cutState(client)).get('r3')).toBeNull()
    await client.flush()
    expect(r.sentOperations().map((op) => op.recordId)).toEqual(['r0', 'r1', 'r0', 'r1', 'r3'])
    expect(r.requests.map((q) => q.batchId)).not.toContain(ahead?.batchId)
  })

  it('a rejected batch: discarding its poison operation re-cuts it and the batch cut after it, in queue order', async () => {
    const r = new ModelReceiver()
    server.use(r.handler)
    r.reply(status(422, { error: 'bad', code: 'validation_failed', operationIndex: 1 }))
    const client = h.client({ batchSize: 2 })
    for (const id of ids(4)) await client.update('c', id, { v: id })
    await client.flush()
    expect((await client.status()).state).toBe('blocked')
    const poison = (await client.status()).lastError?.outboxIds ?? []
    expect(await client.discard(poison)).toBe(1)
    expect([...(await cutState(client)).values()]).toEqual([null, null, null])
    await client.flush()
    expect(r.requests.slice(1).flatMap((q) => q.operations.map((op) => op.recordId))).toEqual(['r0', 'r2', 'r3'])
    expect(await client.pending()).toBe(0)
  })

  it('dead letters: the rest of the rejected batch goes before the batch cut after it', async () => {
    const r = new ModelReceiver()
    server.use(r.handler)
    r.reply(status(422, { error: 'bad', code: 'validation_failed', operationIndex: 0 }))
    const client = h.client({ batchSize: 2, deadLetter: true })
    for (const id of ids(4)) await client.update('c', id, { v: id })
    expect(await client.flush()).toEqual({ delivered: 3, pending: 0 })
    expect((await client.deadLetters()).map((d) => d.operation.recordId)).toEqual(['r0'])
    expect(r.appliedOperations.map((op) => op.recordId)).toEqual(['r1', 'r2', 'r3'])
  })

  it('another tab discarding a queued operation mid-drain: the drain does not send it', async () => {
    const g = gatedReceiver()
    const a = h.client({ batchSize: 2 })
    const b = h.client({ batchSize: 2 })
    for (const id of ids(8)) await a.update('c', id, { v: id })
    const flushing = a.flush()
    await until(() => g.waiting() === 1, 'first batch on the wire')
    await eventually(async () => (await cutState(b)).get('r2') !== null, 'second batch cut')
    // r4 is still queued, and the drain read it already (its window covers the whole queue).
    const r4 = (await b.outbox()).find((e) => e.operation.recordId === 'r4')
    expect(r4?.batchId).toBeNull()
    expect(await b.discard([r4?.id ?? -1])).toBe(1)
    await releaseUntil(g, () => g.r.appliedBatches.length === 4)
    expect(await flushing).toEqual({ delivered: 7, pending: 0 })
    expect(g.r.sentOperations().map((op) => op.recordId)).toEqual(['r0', 'r1', 'r2', 'r3', 'r5', 'r6', 'r7'])
  })

  it('an acknowledgement that cannot be recorded fails the flush; the next one resends under the same batchIds', async () => {
    const r = new ModelReceiver()
    server.use(r.handler)
    const client = h.client({ batchSize: 1 })
    const acks: [string, boolean][] = []
    client.onDelivered((batchId, _ops, info) => acks.push([batchId, info.duplicate]))
    for (const id of ids(3)) await client.update('c', id, { v: id })
    const complete = vi.spyOn(OutboxDb.prototype, 'complete').mockRejectedValueOnce(new Error('disk gone'))
    const error = await client.flush().catch((e: unknown) => e)
    complete.mockRestore()
    expect((error as SyncClientError).code).toBe('storage_failed')
    // An acknowledgement is waited for one answer later: two more batches went out meanwhile, none recorded.
    const sent = r.requests.map((q) => q.batchId)
    expect(sent).toHaveLength(3)
    expect(await client.flush()).toEqual({ delivered: 3, pending: 0 })
    expect(r.requests.slice(3).map((q) => q.batchId)).toEqual(sent)
    expect(acks).toEqual(sent.map((batchId) => [batchId, true]))
    expect(r.appliedOperations.map((op) => op.recordId)).toEqual(ids(3))
  })

  it('a batch cut to go out next counts as possibly sent once its holder is gone without an answer', async () => {
    const clock = new ManualClock(1_000)
    const r = new ModelReceiver()
    server.use(r.handler)
    r.reply(() => new Promise<Response>(() => {})) // the first request never ends: the tab "crashed" meanwhile
    const a = h.client({ batchSize: 1, clock, requestTimeoutMs: 1_000 })
    for (const id of ids(2)) await a.update('c', id, { v: id })
    void a.flush().catch(() => undefined)
    await until(() => r.requests.length === 1, 'first request')
    await settle()
    const b = h.client({ batchSize: 1, clock: new ManualClock(60_000) })
    const entries = await b.outbox()
    expect(entries.map((e) => e.batchId)).toEqual([expect.any(String), expect.any(String)])
    // Long after both marks ran out: neither batch can be told apart from one that reached the receiver.
    for (const entry of entries) {
      const error = await b.discard([entry.id]).catch((e: unknown) => e)
      expect(error).toBeInstanceOf(SyncClientError)
      expect((error as SyncClientError).code).toBe('invalid_operation')
    }
  })

  it('reads and sends a batch persisted by an earlier version (arrays, no sent flag)', async () => {
    const r = new ModelReceiver()
    server.use(r.handler)
    const client = h.client()
    await client.pending() // creates the database
    const raw = new Dexie('flagsync', { indexedDB: h.indexedDB, IDBKeyRange })
    await raw.open()
    const op: Operation = { action: 'update', collection: 'c', recordId: 'old', changes: { v: 1 } }
    await raw.table('batches').add({
      batchId: 'old-batch',
      operations: [op],
      sourceIds: [[7]],
      sources: [{ id: 7, op, queuedAt: 1 }],
      attempts: 1,
      nextAttemptAt: 0,
      lastError: null,
      sendingUntil: 0,
      createdAt: 1,
    })
    raw.close()
    expect(await client.outbox()).toEqual([{ id: 7, operation: op, batchId: 'old-batch', queuedAt: 1 }])
    const error = await client.discard([7]).catch((e: unknown) => e)
    expect((error as SyncClientError).code).toBe('invalid_operation') // attempted before: may have been applied
    await client.update('c', 'new', { v: 2 })
    expect(await client.flush()).toEqual({ delivered: 2, pending: 0 })
    expect(r.requests.map((q) => [q.batchId === 'old-batch', q.operations.map((o) => o.recordId)])).toEqual([
      [true, ['old']],
      [false, ['new']],
    ])
  })
})

describe('cutting while batches are unacknowledged', () => {
  const x = (action: 'insert' | 'delete'): Operation =>
    action === 'insert'
      ? { action, collection: 'c', recordId: 'x', record: { a: 1 } }
      : { action, collection: 'c', recordId: 'x' }
  const onWire = (operations: Operation[]) => ({ operations }) as BatchRow

  async function cutInsertDelete(unrecorded: BatchRow[], delivered: boolean): Promise<Operation[] | undefined> {
    const store = new OutboxDb('cut-test', { indexedDB: new IDBFactory(), IDBKeyRange })
    try {
      if (delivered) await addRemoteRows(store.db, [{ keys: ['c\u0000x'], gone: [] }])
      await store.enqueue(x('insert'), 1)
      await store.enqueue(x('delete'), 2)
      const cut = { batchSize: 5, newBatchId: () => 'b', now: 3, sendingUntil: 0, view: EMPTY_VIEW, unrecorded }
      return (await store.nextBatch(null, cut)).batch?.operations
    } finally {
      store.close()
    }
  }

  it('insert … delete of a record a batch on the wire creates still sends the delete', async () => {
    expect(await cutInsertDelete([], false)).toBeUndefined() // nothing delivered: it cancels out
    expect(await cutInsertDelete([onWire([x('insert')])], false)).toEqual([x('delete')])
  })

  it('… and cancels out when the batch on the wire deletes a record remoteKeys still has', async () => {
    expect(await cutInsertDelete([], true)).toEqual([x('delete')])
    expect(await cutInsertDelete([onWire([x('insert')]), onWire([x('delete')])], true)).toBeUndefined()
  })
})

describe('pipelined delivery under failures (property)', () => {
  const failure = fc.constantFrom('none', 'none', 503, 'network', 'lost-ack', 422)
  const step = fc.oneof(
    fc.record({
      kind: fc.constant('write' as const),
      rec: fc.nat({ max: 7 }),
      action: fc.constantFrom('insert', 'update', 'update', 'delete'),
      v: fc.nat({ max: 9 }),
    }),
    fc.record({ kind: fc.constant('flush' as const), failAt: fc.nat({ max: 3 }), fail: failure }),
  )

  it('whatever request of a drain fails: each batch is applied once, in queue order, and the receiver ends in the state of the raw queue', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(step, { maxLength: 50 }), fc.integer({ min: 1, max: 3 }), async (steps, batchSize) => {
        const hh = harness()
        const r = new ModelReceiver()
        server.use(r.handler)
        const client = hh.client({ batchSize })
        const raw: Operation[] = []
        const sentIn = new Map<string, Operation[]>()
        try {
          for (const s of steps) {
            if (s.kind === 'flush') {
              if (s.fail !== 'none') {
                // Let `failAt` requests through, then fail one.
                const pass = (q: Received) => r.apply(q)
                const fail = (q: Received): Response => {
                  if (s.fail === 'lost-ack') {
                    r.apply(q)
                    return HttpResponse.error()
                  }
                  if (s.fail === 'network') return HttpResponse.error()
                  return HttpResponse.json({ error: 'x' }, { status: s.fail as number })
                }
                r.reply(...Array.from({ length: s.failAt }, () => pass), fail)
              }
              await client.flush()
              continue
            }
            const recordId = `k${s.rec}`
            try {
              if (s.action === 'insert') await client.insert('c', { v: s.v }, { recordId })
              else if (s.action === 'update') await client.update('c', recordId, { v: s.v })
              else await client.delete('c', recordId)
            } catch (error) {
              if (!(error instanceof SyncClientError) || error.code !== 'invalid_operation') throw error
              continue
            }
            raw.push(((await client.outbox()).at(-1) as { operation: Operation }).operation)
          }
          // Failures queued for requests that did not happen strike later flushes: flush until they are used up.
          for (let i = 0; i < 6 && (await client.pending()) > 0; i++) await client.flush()
          expect(await client.pending()).toBe(0)
          // A batchId always carries the same operations, and is applied at most once.
          for (const q of r.requests) {
            const before = sentIn.get(q.batchId)
            if (before) expect(q.operations).toEqual(before)
            else sentIn.set(q.batchId, q.operations)
          }
          expect(new Set(r.appliedBatches).size).toBe(r.appliedBatches.length)
          expect(r.records).toEqual(modelState(raw))
        } finally {
          await hh.closeAll()
        }
      }),
      { numRuns: 60 },
    )
  })
})
