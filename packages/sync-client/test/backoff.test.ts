import { afterEach, describe, expect, it } from 'vitest'
import { manualOnlineSource, type SyncClientOptions } from '../src/index.js'
import { harness, ManualClock, ModelReceiver, networkError, status, useMockServer } from './helpers.js'

describe('retry schedule of a running client', () => {
  const server = useMockServer()
  let h = harness()
  afterEach(async () => {
    await h.closeAll()
    h = harness()
  })

  /** Starts a client whose webhook answers with `replies` first, and records when each request arrived. */
  async function failingClient(replies: Parameters<ModelReceiver['reply']>, extra: Partial<SyncClientOptions> = {}) {
    const clock = new ManualClock(0)
    const r = new ModelReceiver({ now: clock.now })
    server.use(r.handler)
    r.reply(...replies)
    const times = () => r.requests.map((q) => q.at)
    const client = h.client({ clock, random: () => 0, syncIntervalMs: 1_000_000, ...extra })
    await client.update('c', '1', { v: 1 })
    client.start()
    await clock.advance(0)
    return { r, client, times, clock }
  }

  it('retries after 1 s, 2 s, 4 s, 8 s … up to 60 s, then succeeds and resets', async () => {
    const failures = Array.from({ length: 8 }, () => status(503))
    const { r, client, times, clock } = await failingClient(failures)
    await clock.advance(200_000)
    expect(times()).toEqual([0, 1000, 3000, 7000, 15_000, 31_000, 63_000, 123_000, 183_000])
    expect(new Set(r.requests.map((q) => q.batchId)).size).toBe(1)
    expect(r.appliedBatches).toHaveLength(1)
    expect(await client.pending()).toBe(0)
    expect((await client.status()).lastError).toBeNull()

    // A success resets the schedule: the next batch's first retry waits 1 s again.
    r.reply(status(500))
    await client.update('c', '2', { v: 1 })
    await client.flush()
    expect(await client.status()).toMatchObject({ state: 'backoff', nextAttemptAt: clock.now() + 1000 })
    await clock.advance(999)
    expect(r.requests).toHaveLength(10)
    await clock.advance(1)
    expect(r.requests).toHaveLength(11)
  })

  it('honours Retry-After (seconds) on 429 and 503, when longer than the backoff', async () => {
    const { times, clock } = await failingClient([
      status(429, { error: 'slow down' }, { 'Retry-After': '7' }),
      status(503, { error: 'maintenance' }, { 'Retry-After': '1' }),
    ])
    await clock.advance(20_000)
    // 7 s from Retry-After, then the 2 s backoff beats a 1 s Retry-After.
    expect(times()).toEqual([0, 7000, 9000])
  })

  it('honours Retry-After as an HTTP date, capped at maxRetryAfterMs', async () => {
    const { r, clock, client } = await failingClient([
      status(503, {}, { 'Retry-After': new Date(30_000).toUTCString() }),
      status(503, {}, { 'Retry-After': '86400' }),
    ])
    await clock.advance(29_999)
    expect(r.requests).toHaveLength(1)
    await clock.advance(1)
    expect(r.requests).toHaveLength(2)
    expect((await client.status()).nextAttemptAt).toBe(30_000 + 300_000)
  })

  it('treats 408 and 429 as transient: state backoff, with nextAttemptAt and jitter', async () => {
    const { r, client, clock } = await failingClient([status(408), status(429)], { random: () => 0.5 })
    expect(r.requests).toHaveLength(1)
    expect(await client.status()).toMatchObject({ state: 'backoff', nextAttemptAt: 1150, pending: 1 })
    expect((await client.status()).lastError).toMatchObject({ kind: 'transient', status: 408, code: 'http_408' })
    await clock.advance(1149)
    expect(r.requests).toHaveLength(1)
    await clock.advance(1)
    expect(r.requests).toHaveLength(2)
    expect(await client.status()).toMatchObject({ state: 'backoff', nextAttemptAt: 1150 + 2300 })
    expect((await client.status()).lastError).toMatchObject({ status: 429 })
  })

  it('a network error backs off the same way', async () => {
    const { client, times, clock } = await failingClient([networkError, networkError])
    expect((await client.status()).lastError).toMatchObject({ kind: 'network', code: 'network' })
    await clock.advance(5000)
    expect(times()).toEqual([0, 1000, 3000])
    expect((await client.status()).lastError).toBeNull()
  })

  it('a background pass waits for the backoff even when the interval is shorter', async () => {
    const { r, clock } = await failingClient([status(503), status(503), status(503)], { syncIntervalMs: 500 })
    await clock.advance(2999)
    expect(r.requests).toHaveLength(2) // at 0 and 1000, not every 500 ms
    await clock.advance(1)
    expect(r.requests).toHaveLength(3)
  })
})

describe('offline', () => {
  const server = useMockServer()
  let h = harness()
  afterEach(async () => {
    await h.closeAll()
    h = harness()
  })

  it('pauses delivery while offline and syncs at once when back online, with a fresh backoff', async () => {
    const clock = new ManualClock(0)
    const r = new ModelReceiver()
    server.use(r.handler)
    r.reply(status(503), status(503), status(503))
    const online = manualOnlineSource(true)
    const client = h.client({ online, clock, random: () => 0, syncIntervalMs: 5000 })
    await client.update('c', '1', { v: 1 })
    client.start()
    await clock.advance(1000)
    expect(r.requests).toHaveLength(2)
    expect((await client.status()).nextAttemptAt).toBe(1000 + 2000)

    online.setOnline(false)
    expect((await client.status()).state).toBe('offline')
    await clock.advance(60_000)
    expect(r.requests).toHaveLength(2)
    expect(await client.flush()).toEqual({ delivered: 0, pending: 1 })
    expect(r.requests).toHaveLength(2)

    online.setOnline(true)
    await clock.advance(0)
    expect(r.requests).toHaveLength(3)
    // The failure count was reset: the next retry is 1 s away, not 4 s.
    expect((await client.status()).nextAttemptAt).toBe(clock.now() + 1000)
    await clock.advance(1000)
    expect(r.requests).toHaveLength(4)
    expect(await client.pending()).toBe(0)
    expect((await client.status()).state).toBe('idle')
  })
})

describe('retryNow (the server is reachable again)', () => {
  const server = useMockServer()
  let h = harness()
  afterEach(async () => {
    await h.closeAll()
    h = harness()
  })

  async function backingOff(replies: Parameters<ModelReceiver['reply']>) {
    const clock = new ManualClock(0)
    const r = new ModelReceiver({ now: clock.now })
    server.use(r.handler)
    r.reply(...replies)
    // A minute's backoff: without retryNow nothing goes out again for 60 s.
    const client = h.client({
      clock,
      random: () => 0,
      syncIntervalMs: 1_000_000,
      retry: { baseMs: 60_000, maxMs: 600_000 },
    })
    await client.update('c', '1', { v: 1 })
    client.start()
    await clock.advance(0)
    return { r, client, clock }
  }

  it('cuts a network-failure backoff short: the batch goes out at once, same batchId', async () => {
    const { r, client, clock } = await backingOff([networkError])
    expect(r.requests).toHaveLength(1)
    expect(await client.status()).toMatchObject({ state: 'backoff', nextAttemptAt: 60_000 })
    await clock.advance(5000)
    expect(r.requests).toHaveLength(1)

    client.retryNow()
    await clock.advance(0)
    expect(r.requests).toHaveLength(2)
    expect(r.requests[1]?.at).toBe(5000)
    expect(r.requests[1]?.batchId).toBe(r.requests[0]?.batchId)
    expect(await client.status()).toMatchObject({ state: 'idle', pending: 0, lastError: null })
  })

  it('keeps the attempt count: failing again after a nudge waits longer, not from the start', async () => {
    const { r, client, clock } = await backingOff([networkError, networkError])
    client.retryNow()
    await clock.advance(0)
    expect(r.requests).toHaveLength(2)
    // Second failure in a row: 2 × 60 s from now, not a first failure's 60 s.
    expect((await client.status()).nextAttemptAt).toBe(120_000)
  })

  it('leaves a wait the server asked for (503, Retry-After) as it is', async () => {
    const { r, client, clock } = await backingOff([status(503, { error: 'maintenance' }, { 'Retry-After': '120' })])
    expect((await client.status()).nextAttemptAt).toBe(120_000)
    client.retryNow()
    await clock.advance(1000)
    expect(r.requests).toHaveLength(1)
    expect((await client.status()).nextAttemptAt).toBe(120_000)
  })

  it('does nothing when nothing is backing off, and is harmless after close', async () => {
    const { r, client, clock } = await backingOff([])
    expect(r.requests).toHaveLength(1)
    client.retryNow()
    await clock.advance(0)
    expect(r.requests).toHaveLength(1)
    await client.close()
    expect(() => client.retryNow()).not.toThrow()
  })
})
