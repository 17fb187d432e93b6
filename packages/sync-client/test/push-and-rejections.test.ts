import { afterEach, describe, expect, it } from 'vitest'
import { harness, ManualClock, ModelReceiver, status, useMockServer } from './helpers.js'

const server = useMockServer()
let h = harness()
afterEach(async () => {
  await h.closeAll()
  h = harness()
})

describe('push on write', () => {
  it('a started client delivers a write after pushDelayMs, long before the interval', async () => {
    const clock = new ManualClock(0)
    const r = new ModelReceiver({ now: clock.now })
    server.use(r.handler)
    const client = h.client({ clock, syncIntervalMs: 60_000 })
    client.start()
    await clock.advance(0)
    await client.update('c', '1', { v: 1 })
    await client.update('c', '1', { v: 2 }) // the same user action: one batch
    await clock.advance(24)
    expect(r.requests).toHaveLength(0)
    await clock.advance(1)
    expect(r.requests).toHaveLength(1)
    expect(r.requests[0]?.operations).toEqual([{ action: 'update', collection: 'c', recordId: '1', changes: { v: 2 } }])
  })

  it('does not cut a backoff short', async () => {
    const clock = new ManualClock(0)
    const r = new ModelReceiver({ now: clock.now })
    server.use(r.handler)
    r.reply(status(503))
    const client = h.client({ clock, random: () => 0, syncIntervalMs: 60_000 })
    client.start()
    await client.update('c', '1', { v: 1 })
    await clock.advance(0)
    expect(r.requests).toHaveLength(1) // failed at 0: retry due at 1000
    await clock.advance(25)
    await client.update('c', '2', { v: 1 })
    await clock.advance(100)
    expect(r.requests).toHaveLength(1) // the push waited for the backoff
    await clock.advance(875)
    // At 1000 the retried batch goes first, then the newer write in the same pass.
    expect(r.requests.map((q) => q.at)).toEqual([0, 1000, 1000])
    expect(r.requests[2]?.operations[0]?.recordId).toBe('2')
  })

  it('pushDelayMs: null waits for the interval', async () => {
    const clock = new ManualClock(0)
    const r = new ModelReceiver({ now: clock.now })
    server.use(r.handler)
    const client = h.client({ clock, syncIntervalMs: 5000, pushDelayMs: null })
    client.start()
    await clock.advance(0)
    await client.update('c', '1', { v: 1 })
    await clock.advance(4999)
    expect(r.requests).toHaveLength(0)
    await clock.advance(1)
    expect(r.requests).toHaveLength(1)
  })
})

describe('rejections name their outbox ids', () => {
  it('lastError.outboxIds lists the queued operations behind the rejected one, ready for discard()', async () => {
    const r = new ModelReceiver({ strictUpdates: true })
    server.use(r.handler)
    const client = h.client()
    await client.insert('c', { v: 1 }, { recordId: 'ok' })
    await client.update('c', 'missing', { a: 1 })
    await client.update('c', 'missing', { b: 2 }) // compacted with the one above
    await client.insert('c', { v: 2 }, { recordId: 'also-ok' })
    await client.flush()
    const { state, lastError } = await client.status()
    expect(state).toBe('blocked')
    expect(lastError?.operationIndex).toBe(1)
    const queued = await client.outbox()
    const missing = queued.filter((e) => e.operation.recordId === 'missing').map((e) => e.id)
    expect(lastError?.outboxIds).toEqual(missing)
    await client.discard(lastError?.outboxIds ?? [])
    expect(await client.flush()).toEqual({ delivered: 2, pending: 0 })
    expect([...r.records.keys()]).toEqual(['c/ok', 'c/also-ok'])
  })
})
