import type { Operation } from '@flagsync/protocol'
import { HttpResponse } from 'msw'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { FAKE_TIMERS, harness, ModelReceiver, networkError, settle, status, until, useMockServer } from './helpers.js'

const server = useMockServer()
let h = harness()
let receiver = new ModelReceiver()

afterEach(async () => {
  vi.useRealTimers()
  await h.closeAll()
  h = harness()
  receiver = new ModelReceiver()
})

function useReceiver(): ModelReceiver {
  server.use(receiver.handler)
  return receiver
}

describe('wire format', () => {
  it('POSTs {batchId, operations} as JSON with the configured headers', async () => {
    const r = useReceiver()
    const client = h.client({
      headers: { Authorization: 'Bearer s3cret', 'X-App': 'demo', 'content-type': 'text/plain' },
    })
    await client.insert('flags', { key: 'a', is_enabled: true }, { recordId: 'a' })
    await client.delete('flags', 'gone')
    expect(await client.flush()).toEqual({ delivered: 2, pending: 0 })

    expect(r.requests).toHaveLength(1)
    const [request] = r.requests
    expect(request?.headers.get('content-type')).toBe('application/json')
    expect(request?.headers.get('authorization')).toBe('Bearer s3cret')
    expect(request?.headers.get('x-app')).toBe('demo')
    expect(request?.batchId).toMatch(/^[0-9a-f-]{36}$/)
    expect(request?.operations).toEqual([
      { action: 'insert', collection: 'flags', recordId: 'a', record: { key: 'a', is_enabled: true } },
      { action: 'delete', collection: 'flags', recordId: 'gone' },
    ])
  })

  it('sends exactly the two fields in the body', async () => {
    let raw = ''
    server.use(
      (await import('msw')).http.post('https://receiver.test/sync', async ({ request }) => {
        raw = await request.text()
        return HttpResponse.json({ ok: true })
      }),
    )
    const client = h.client({ generateId: () => 'fixed-id' })
    await client.update('c', '1', { v: 1 })
    await client.flush()
    expect(JSON.parse(raw)).toEqual({
      batchId: 'fixed-id',
      operations: [{ action: 'update', collection: 'c', recordId: '1', changes: { v: 1 } }],
    })
  })

  it('calls a headers function before every attempt (fresh tokens)', async () => {
    const r = useReceiver()
    r.reply(status(503))
    let n = 0
    const client = h.client({ headers: () => ({ authorization: `Bearer t${++n}` }) })
    await client.update('c', '1', { v: 1 })
    await client.flush()
    await client.flush()
    expect(r.requests.map((q) => q.headers.get('authorization'))).toEqual(['Bearer t1', 'Bearer t2'])
  })
})

describe('batches', () => {
  it('cuts batches of at most batchSize, in order of first appearance, in one flush', async () => {
    const r = useReceiver()
    const client = h.client({ batchSize: 50 })
    for (let i = 0; i < 120; i++) await client.update('c', `r${i}`, { v: i })
    await client.update('c', 'r0', { w: 1 }) // merges into the first record's update
    expect(await client.pending()).toBe(120)
    expect(await client.flush()).toEqual({ delivered: 120, pending: 0 })
    expect(r.requests.map((q) => q.operations.length)).toEqual([50, 50, 20])
    expect(r.sentOperations().map((op) => op.recordId)).toEqual(Array.from({ length: 120 }, (_, i) => `r${i}`))
    expect(r.requests[0]?.operations[0]).toEqual({
      action: 'update',
      collection: 'c',
      recordId: 'r0',
      changes: { v: 0, w: 1 },
    })
    expect(new Set(r.requests.map((q) => q.batchId)).size).toBe(3)
    expect(await client.outbox()).toEqual([])
  })

  it('a backlog larger than the compaction window is split at the window edge, in order', async () => {
    const r = useReceiver()
    const client = h.client({ batchSize: 2 })
    // The window is max(200, 4 × batchSize) queued operations.
    for (let i = 0; i < 240; i++) await client.update('c', 'hot', { v: i })
    await client.update('c', 'other', { v: 1 })
    expect(await client.pending()).toBe(2) // pending() compacts the whole queue
    await client.flush()
    expect(
      r.requests.map((q) => q.operations.map((op) => [op.recordId, (op as { changes: unknown }).changes])),
    ).toEqual([
      [['hot', { v: 199 }]],
      [
        ['hot', { v: 239 }],
        ['other', { v: 1 }],
      ],
    ])
    expect(r.records.get('c/hot')).toEqual({ v: 239 })
  })

  it('uses the default batch size of 50', async () => {
    const r = useReceiver()
    const client = h.client()
    for (let i = 0; i < 51; i++) await client.delete('c', `r${i}`)
    await client.flush()
    expect(r.requests.map((q) => q.operations.length)).toEqual([50, 1])
  })

  it('one background pass drains the whole queue, not one batch per interval', async () => {
    vi.useFakeTimers(FAKE_TIMERS)
    const r = useReceiver()
    const client = h.client({ batchSize: 10, syncIntervalMs: 60_000 })
    for (let i = 0; i < 35; i++) await client.update('c', `r${i}`, { v: i })
    client.start()
    await vi.advanceTimersByTimeAsync(0)
    await until(() => r.requests.length === 4, 'four batches')
    // The last acknowledgements are recorded just after the last answer; fake time does not move meanwhile.
    for (let i = 0; i < 20 && (await client.pending()) > 0; i++) await settle()
    expect(r.requests.map((q) => q.operations.length)).toEqual([10, 10, 10, 5])
    expect(await client.pending()).toBe(0)
  })

  it('then runs every syncIntervalMs', async () => {
    vi.useFakeTimers(FAKE_TIMERS)
    const r = useReceiver()
    const client = h.client({ syncIntervalMs: 5000, pushDelayMs: null }) // only the interval, no push on write
    client.start()
    await vi.advanceTimersByTimeAsync(0)
    await settle()
    await client.update('c', '1', { v: 1 })
    await vi.advanceTimersByTimeAsync(4999)
    await settle()
    expect(r.requests).toHaveLength(0)
    await vi.advanceTimersByTimeAsync(1)
    await until(() => r.requests.length === 1, 'the interval pass')
  })
})

describe('compaction on the wire', () => {
  const cases: [string, (c: ReturnType<typeof h.client>) => Promise<unknown>, Operation[]][] = [
    [
      'insert then update → one insert with merged data',
      async (c) => {
        await c.insert('c', { id: '1', a: 1, b: 1 })
        await c.update('c', '1', { b: 2 })
      },
      [{ action: 'insert', collection: 'c', recordId: '1', record: { id: '1', a: 1, b: 2 } }],
    ],
    [
      'several updates → one update',
      async (c) => {
        await c.update('c', '1', { a: 1 })
        await c.update('c', '1', { b: 2 })
        await c.update('c', '1', { a: 3 })
      },
      [{ action: 'update', collection: 'c', recordId: '1', changes: { a: 3, b: 2 } }],
    ],
    [
      'update then delete → delete',
      async (c) => {
        await c.update('c', '1', { a: 1 })
        await c.delete('c', '1')
      },
      [{ action: 'delete', collection: 'c', recordId: '1' }],
    ],
    [
      'delete then insert → insert',
      async (c) => {
        await c.delete('c', '1')
        await c.insert('c', { a: 1 }, { recordId: '1' })
      },
      [{ action: 'insert', collection: 'c', recordId: '1', record: { a: 1 } }],
    ],
  ]

  it.each(cases)('%s', async (_name, act, expected) => {
    const r = useReceiver()
    const client = h.client()
    await act(client)
    await client.flush()
    expect(r.sentOperations()).toEqual(expected)
  })

  it('insert then delete → nothing is sent at all', async () => {
    const r = useReceiver()
    const client = h.client()
    await client.insert('c', { a: 1 }, { recordId: '1' })
    await client.update('c', '1', { a: 2 })
    await client.delete('c', '1')
    expect(await client.pending()).toBe(0)
    expect(await client.flush()).toEqual({ delivered: 0, pending: 0 })
    expect(r.requests).toHaveLength(0)
    expect(await client.outbox()).toEqual([])
  })

  it('an insert that was delivered and then deleted still sends the delete', async () => {
    const r = useReceiver()
    const client = h.client()
    await client.insert('c', { a: 1 }, { recordId: '1' })
    await client.flush()
    await client.delete('c', '1')
    await client.flush()
    expect(r.sentOperations().map((op) => op.action)).toEqual(['insert', 'delete'])
    expect(r.records.has('c/1')).toBe(false)
  })

  it('a delivered record inserted again and deleted still gets its delete (the insert replaced, not created)', async () => {
    const r = useReceiver()
    const client = h.client()
    await client.insert('c', { a: 1 }, { recordId: '1' })
    await client.flush()
    await client.insert('c', { a: 2 }, { recordId: '1' })
    await client.delete('c', '1')
    expect(await client.pending()).toBe(1)
    await client.flush()
    expect(r.sentOperations().map((op) => op.action)).toEqual(['insert', 'delete'])
    expect(r.records.has('c/1')).toBe(false)

    // Once the delete is acknowledged the record is gone remotely: insert … delete cancels again.
    await client.insert('c', { a: 3 }, { recordId: '1' })
    await client.delete('c', '1')
    expect(await client.pending()).toBe(0)
  })

  it('an insert in a batch that is still in flight is not compacted with a later delete', async () => {
    const r = useReceiver()
    r.reply(status(503))
    const client = h.client()
    await client.insert('c', { a: 1 }, { recordId: '1' })
    await client.flush() // batch cut, attempt failed: the insert may have been applied
    await client.delete('c', '1')
    expect(await client.pending()).toBe(2)
    await client.flush()
    expect(r.requests.map((q) => q.operations.map((op) => op.action))).toEqual([['insert'], ['insert'], ['delete']])
    expect(r.records.has('c/1')).toBe(false)
  })
})

describe('at-least-once delivery with a stable batchId', () => {
  it('retries a failed batch with the same batchId and operations; later writes wait for a later batch', async () => {
    const r = useReceiver()
    r.reply(status(503), networkError, status(500))
    const client = h.client()
    await client.update('c', '1', { v: 1 })
    await client.update('c', '2', { v: 1 })
    await client.flush()
    await client.update('c', '1', { v: 2 }) // queued while the batch waits for its retry
    await client.update('c', '3', { v: 1 })
    await client.flush()
    await client.flush()
    const result = await client.flush()
    expect(result).toEqual({ delivered: 4, pending: 0 })
    const [first, ...rest] = r.requests
    expect(rest.slice(0, 3).map((q) => q.batchId)).toEqual([first?.batchId, first?.batchId, first?.batchId])
    for (const retry of rest.slice(0, 3)) expect(retry.operations).toEqual(first?.operations)
    expect(first?.operations).toEqual([
      { action: 'update', collection: 'c', recordId: '1', changes: { v: 1 } },
      { action: 'update', collection: 'c', recordId: '2', changes: { v: 1 } },
    ])
    expect(r.requests[4]?.batchId).not.toBe(first?.batchId)
    expect(r.requests[4]?.operations).toEqual([
      { action: 'update', collection: 'c', recordId: '1', changes: { v: 2 } },
      { action: 'update', collection: 'c', recordId: '3', changes: { v: 1 } },
    ])
  })

  it('keeps the batchId across a new client instance on the same database (page reload)', async () => {
    const r = useReceiver()
    r.reply(status(503))
    const first = h.client()
    await first.update('c', '1', { v: 1 })
    await first.flush()
    await first.close()
    const second = h.client()
    expect((await second.outbox()).map((e) => e.batchId)).toEqual([r.requests[0]?.batchId])
    await second.update('c', '2', { v: 1 })
    await second.flush()
    expect(r.requests[1]?.batchId).toBe(r.requests[0]?.batchId)
    expect(r.requests[1]?.operations).toEqual(r.requests[0]?.operations)
    expect(r.requests[2]?.operations.map((op) => op.recordId)).toEqual(['2'])
  })

  it('a lost acknowledgement leads to a resend that the receiver dedupes: applied once', async () => {
    const r = useReceiver()
    // The receiver applies the batch but the answer never arrives.
    r.reply(async (received) => {
      r.apply(received)
      return HttpResponse.error()
    })
    const client = h.client()
    await client.update('c', '1', { v: 1 })
    r.records.set('c/1', { v: 0 })
    await client.flush()
    expect(r.appliedBatches).toHaveLength(1)
    await client.flush()
    expect(r.requests).toHaveLength(2)
    expect(r.requests[1]?.batchId).toBe(r.requests[0]?.batchId)
    expect(r.appliedBatches).toHaveLength(1)
    expect(r.appliedOperations).toHaveLength(1)
    expect(await client.pending()).toBe(0)
  })

  it('operations queued while a batch is in flight go to the next batch and survive the ack', async () => {
    const client = h.client()
    const r = useReceiver()
    r.reply(async (received) => {
      await client.update('c', '1', { v: 2 })
      await client.update('c', '2', { v: 1 })
      return HttpResponse.json({ batchId: received.batchId, applied: received.operations.length })
    })
    await client.update('c', '1', { v: 1 })
    const result = await client.flush()
    expect(result).toEqual({ delivered: 3, pending: 0 })
    expect(
      r.requests.map((q) => q.operations.map((op) => [op.recordId, (op as { changes: unknown }).changes])),
    ).toEqual([
      [['1', { v: 1 }]],
      [
        ['1', { v: 2 }],
        ['2', { v: 1 }],
      ],
    ])
  })

  it('flush stops at the first failure and reports what is left', async () => {
    const r = useReceiver()
    const client = h.client({ batchSize: 2 })
    for (let i = 0; i < 5; i++) await client.update('c', `r${i}`, { v: i })
    r.reply((q) => HttpResponse.json({ batchId: q.batchId }), status(500))
    expect(await client.flush()).toEqual({ delivered: 2, pending: 3 })
    expect(r.requests).toHaveLength(2)
  })

  it('onDelivered reports each acknowledged batch with its operations', async () => {
    useReceiver()
    const client = h.client({ batchSize: 1 })
    const seen: [string, Operation[]][] = []
    const off = client.onDelivered((batchId, operations) => seen.push([batchId, operations]))
    await client.update('c', '1', { v: 1 })
    await client.delete('c', '2')
    await client.flush()
    expect(seen.map(([, ops]) => ops)).toEqual([
      [{ action: 'update', collection: 'c', recordId: '1', changes: { v: 1 } }],
      [{ action: 'delete', collection: 'c', recordId: '2' }],
    ])
    expect(seen[0]?.[0]).toBe(receiver.requests[0]?.batchId)
    off()
    await client.delete('c', '3')
    await client.flush()
    expect(seen).toHaveLength(2)
  })

  it('a request without an answer times out as a network error and is retried', async () => {
    vi.useFakeTimers(FAKE_TIMERS)
    const r = useReceiver()
    r.reply(() => new Promise<Response>(() => {}))
    const client = h.client({ requestTimeoutMs: 10_000, random: () => 0 })
    await client.update('c', '1', { v: 1 })
    const flushed = client.flush()
    await until(() => r.requests.length === 1, 'the request')
    await vi.advanceTimersByTimeAsync(10_000)
    expect(await flushed).toEqual({ delivered: 0, pending: 1 })
    const s = await client.status()
    expect(s.lastError).toMatchObject({ kind: 'network', code: 'timeout' })
    expect(s.state).toBe('backoff')
    expect(await client.flush()).toEqual({ delivered: 1, pending: 0 })
    expect(r.requests[1]?.batchId).toBe(r.requests[0]?.batchId)
  })
})
