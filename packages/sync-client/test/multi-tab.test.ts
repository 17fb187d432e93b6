import type { Operation } from '@flagsync/protocol'
import { HttpResponse } from 'msw'
import { afterEach, describe, expect, it } from 'vitest'
import type { SyncClient, SyncStatus } from '../src/index.js'
import {
  broadcastBus,
  FakeLocks,
  harness,
  ManualClock,
  ModelReceiver,
  type Received,
  settle,
  status,
  until,
  useMockServer,
} from './helpers.js'

const server = useMockServer()
let h = harness()
afterEach(async () => {
  await h.closeAll()
  h = harness()
})

/** A receiver that answers slowly (so tabs overlap) and counts concurrent requests. */
function slowReceiver(failEvery = 0) {
  const r = new ModelReceiver()
  let inFlight = 0
  let count = 0
  const stats = { maxInFlight: 0 }
  server.use(r.handler)
  const slow = async (q: Received): Promise<Response> => {
    inFlight++
    stats.maxInFlight = Math.max(stats.maxInFlight, inFlight)
    await new Promise((resolve) => setTimeout(resolve, 3))
    inFlight--
    count++
    if (failEvery > 0 && count % failEvery === 0) return HttpResponse.json({ error: 'busy' }, { status: 503 })
    r.reply(slow)
    return r.apply(q)
  }
  r.reply(slow)
  return { r, stats }
}

/** Each recordId must have been sent in exactly one batch (a retry reuses that batch's id). */
function batchesPerRecord(requests: Received[]): Map<string, Set<string>> {
  const out = new Map<string, Set<string>>()
  for (const q of requests) {
    for (const op of q.operations) {
      const set = out.get(op.recordId) ?? new Set()
      set.add(q.batchId)
      out.set(op.recordId, set)
    }
  }
  return out
}

async function writeFromBothTabs(a: SyncClient, b: SyncClient, n: number): Promise<string[]> {
  const ids: string[] = []
  await Promise.all(
    [a, b].map(async (client, tab) => {
      for (let i = 0; i < n; i++) {
        const id = `t${tab}-${i}`
        ids.push(id)
        await client.insert('c', { n: i }, { recordId: id })
        if (i % 7 === 0) await new Promise((resolve) => setTimeout(resolve, 1))
      }
    }),
  )
  return ids
}

describe.each([
  ['IndexedDB lease (no Web Locks)', () => null],
  ['Web Locks', () => new FakeLocks()],
])('two tabs on one outbox, %s', (_name, makeLocks) => {
  it('never send the same operation twice and never send at the same time', async () => {
    const { r, stats } = slowReceiver()
    const locks = makeLocks()
    const a = h.client({ locks, syncIntervalMs: 2, batchSize: 7 })
    const b = h.client({ locks, syncIntervalMs: 2, batchSize: 7 })
    a.start()
    b.start()
    const ids = await writeFromBothTabs(a, b, 60)
    await until(() => r.appliedOperations.length === ids.length, 'all operations delivered', 15_000)
    await Promise.all([a.flush(), b.flush()])

    expect(stats.maxInFlight).toBe(1)
    if (locks) expect(locks.maxConcurrent).toBe(1)
    const sent = r.sentOperations().map((op) => op.recordId)
    expect(sent).toHaveLength(ids.length)
    expect(new Set(sent)).toEqual(new Set(ids))
    expect(new Set(r.requests.map((q) => q.batchId)).size).toBe(r.requests.length)
    expect(await a.pending()).toBe(0)
    expect(await b.pending()).toBe(0)
  })

  it('with failures, a retried batch keeps its id and every operation is applied once', async () => {
    const { r, stats } = slowReceiver(3)
    const locks = makeLocks()
    const a = h.client({ locks, syncIntervalMs: 2, batchSize: 5, retry: { baseMs: 2, maxMs: 10 } })
    const b = h.client({ locks, syncIntervalMs: 2, batchSize: 5, retry: { baseMs: 2, maxMs: 10 } })
    a.start()
    b.start()
    const ids = await writeFromBothTabs(a, b, 40)
    await until(() => r.appliedOperations.length === ids.length, 'all operations applied', 15_000)

    expect(stats.maxInFlight).toBe(1)
    expect(r.requests.length).toBeGreaterThan(r.appliedBatches.length) // some were retried
    for (const [, batches] of batchesPerRecord(r.requests)) expect(batches.size).toBe(1)
    expect(r.appliedOperations.map((op) => op.recordId).sort()).toEqual([...ids].sort())
  })
})

describe('delivery lock hand-over', () => {
  it('close() releases the lease at once: another instance resends the same batch', async () => {
    const r = new ModelReceiver()
    server.use(r.handler)
    let release: (() => void) | undefined
    r.reply(
      (q) =>
        new Promise<Response>((resolve) => {
          release = () => resolve(HttpResponse.json({ batchId: q.batchId }))
        }),
    )
    const a = h.client()
    const b = h.client()
    await a.update('c', '1', { v: 1 })
    const aFlush = a.flush().catch((error: unknown) => error)
    await until(() => r.requests.length === 1, 'a sends')
    // b cannot deliver while a holds the lease; its background pass gives up at once.
    b.start()
    await settle()
    expect(r.requests).toHaveLength(1)
    b.stop()

    const bFlush = b.flush() // waits for the lease
    await a.close() // aborts a's request and drops the lease
    // A flush interrupted by close() rejects with code 'closed'.
    expect(await aFlush).toMatchObject({ name: 'SyncClientError', code: 'closed' })
    expect(await bFlush).toEqual({ delivered: 1, pending: 0 })
    expect(r.requests).toHaveLength(2)
    expect(r.requests[1]?.batchId).toBe(r.requests[0]?.batchId)
    release?.()
  })

  it('a crashed holder (lease never released) is taken over once its lease expires', async () => {
    const r = new ModelReceiver()
    server.use(r.handler)
    const frozen = new ManualClock(0) // the crashed tab's timers never run again
    let sendingStarted = false
    const hanging: typeof fetch = (_input, init) => {
      sendingStarted = true
      return new Promise((_resolve, reject) =>
        init?.signal?.addEventListener('abort', () => reject(new Error('aborted'))),
      )
    }
    const a = h.client({ clock: frozen, fetch: hanging, requestTimeoutMs: 10_000, leaseMs: 5000 })
    await a.update('c', '1', { v: 1 })
    void a.flush().catch(() => undefined)
    await until(() => sendingStarted, 'a sends')
    const [entry] = await a.outbox()
    expect(entry?.batchId).toBeTruthy()

    const clock = new ManualClock(0)
    const b = h.client({ clock })
    const bFlush = b.flush()
    await clock.advance(10_000 + 1000 + 5000 - 1)
    expect(r.requests).toHaveLength(0)
    await clock.advance(1000)
    expect(await bFlush).toEqual({ delivered: 1, pending: 0 })
    expect(r.requests[0]?.batchId).toBe(entry?.batchId)
  })
})

describe('cross-tab notification', () => {
  it('tells other tabs about outbox changes and deliveries', async () => {
    const r = new ModelReceiver()
    server.use(r.handler)
    const bus = broadcastBus()
    const a = h.client({ broadcastChannel: bus })
    const b = h.client({ broadcastChannel: bus })
    const statuses: SyncStatus[] = []
    const delivered: [string, Operation[]][] = []
    b.subscribe((s) => statuses.push(s))
    b.onDelivered((batchId, ops) => delivered.push([batchId, ops]))
    await settle()
    await a.update('c', '1', { v: 1 })
    await until(() => statuses.at(-1)?.pending === 1, 'b sees the write')
    await a.flush()
    await until(() => delivered.length === 1, 'b hears the delivery')
    expect(delivered[0]).toEqual([
      r.requests[0]?.batchId,
      [{ action: 'update', collection: 'c', recordId: '1', changes: { v: 1 } }],
    ])
    await until(() => statuses.at(-1)?.pending === 0, 'b sees the empty outbox')
  })

  it('uses the platform BroadcastChannel by default', async () => {
    const r = new ModelReceiver()
    server.use(r.handler)
    const dbName = `bc-${Math.random()}`
    const a = h.client({ dbName, broadcastChannel: undefined })
    const b = h.client({ dbName, broadcastChannel: undefined })
    const delivered: string[] = []
    b.onDelivered((batchId) => delivered.push(batchId))
    await a.delete('c', '1')
    await a.flush()
    await until(() => delivered.length === 1, 'b hears the delivery')
    expect(delivered).toEqual([r.requests[0]?.batchId])
  })

  it('a blocked batch shows as blocked in every tab (the state lives in IndexedDB)', async () => {
    const r = new ModelReceiver()
    server.use(r.handler)
    r.reply(status(422, { error: 'no' }))
    const bus = broadcastBus()
    const a = h.client({ broadcastChannel: bus })
    const b = h.client({ broadcastChannel: bus })
    await a.delete('c', '1')
    await a.flush()
    expect((await b.status()).state).toBe('blocked')
  })
})
