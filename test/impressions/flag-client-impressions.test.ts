import { type Clock, createFlagClient, type FlagClient, manualOnlineSource } from '@flagsync/flag-client'
import { IDBFactory, IDBKeyRange } from 'fake-indexeddb'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { bearer } from '../../packages/flag-service/test/harness.js'
import { type ImpressionFixture, startImpressionFixture } from '../../packages/flag-service/test/impressions/fixture.js'
import { type FrontServer, startFrontServer } from './front-server.js'

const FLAGS = [
  { key: 'checkout', is_enabled: true },
  { key: 'banner', is_enabled: true, flag_type: 'string', default_value: 'blue', disabled_value: 'none' },
  { key: 'limits', is_enabled: true, flag_type: 'json', default_value: { max: 3 }, disabled_value: {} },
]

const systemClock: Clock = {
  now: () => Date.now(),
  setTimeout: (cb, ms) => setTimeout(cb, ms),
  clearTimeout: (h) => clearTimeout(h as ReturnType<typeof setTimeout>),
}

/** A fetch that records every impression POST (URL and item count) and can fail the next ones on demand. */
function recordingFetch() {
  const posts: Array<{ url: string; items: number; status: number | 'network error' }> = []
  const failures: Array<'network' | { status: number; retryAfter?: string }> = []
  const impl = (async (input: string | URL | Request, init?: RequestInit) => {
    const url = String(input instanceof Request ? input.url : input)
    if (!url.includes('/impressions')) return fetch(input, init)
    const items = (JSON.parse(String(init?.body)) as unknown[]).length
    const failure = failures.shift()
    if (failure === 'network') {
      posts.push({ url, items, status: 'network error' })
      throw new TypeError('Failed to fetch')
    }
    if (failure) {
      posts.push({ url, items, status: failure.status })
      const headers: Record<string, string> = failure.retryAfter ? { 'Retry-After': failure.retryAfter } : {}
      return new Response(JSON.stringify({ error: 'injected', code: 'unavailable' }), {
        status: failure.status,
        headers,
      })
    }
    const res = await fetch(input, init)
    posts.push({ url, items, status: res.status })
    return res
  }) as typeof fetch
  return { impl, posts, failures }
}

describe('the flag client reports impressions to the real service', () => {
  let f: ImpressionFixture
  let front: FrontServer
  const clients: FlagClient[] = []
  beforeEach(async () => {
    f = await startImpressionFixture('sqlite', { env: { BODY_LIMIT: '64kb' } })
    // The service has the flags the front server streams: it keeps impressions of its environment's flags only.
    for (const flag of FLAGS) {
      const res = await f.h.call(`/api/environments/${f.envId}/flags`, { method: 'POST', as: f.h.admin, body: flag })
      if (res.status !== 200) throw new Error(`flag ${flag.key}: ${res.status} ${JSON.stringify(res.body)}`)
    }
    front = await startFrontServer(f.h.url, { environmentId: f.envId, flags: FLAGS })
  })
  afterEach(async () => {
    for (const c of clients.splice(0)) await c.close()
    await front?.close()
    await f?.dispose()
  })

  function client(options: Partial<Parameters<typeof createFlagClient>[0]> = {}) {
    const c = createFlagClient({
      streamUrl: `${front.url}/stream`,
      sdkKey: f.h.defaultSdkKey,
      indexedDB: new IDBFactory(),
      IDBKeyRange,
      persist: false,
      reconnect: { baseMs: 50, maxMs: 200 },
      ...options,
    })
    clients.push(c)
    return c
  }
  const stored = async (query = '') => (await f.list(`limit=200${query ? `&${query}` : ''}`)).body

  it('records evaluate, isEnabled and getValue of known flags and delivers them to its environment', async () => {
    const http = recordingFetch()
    const flags = client({ fetch: http.impl, impressions: { flushIntervalMs: 60_000 } })
    await flags.ready()
    expect(flags.status().environmentId).toBe(f.envId)
    expect(flags.isEnabled('checkout', { user_id: 'u-1', country: 'DE' })).toBe(true)
    expect(flags.getValue('banner', { user_id: 42 }, 'x')).toBe('blue')
    expect(flags.evaluate('limits').value).toEqual({ max: 3 })
    expect(flags.getValue('missing', { user_id: 'u-1' }, 'fallback')).toBe('fallback') // no such flag: no impression
    await expect.poll(() => flags.impressionStatus().queued).toBe(3)
    expect(http.posts).toEqual([]) // waiting for the batch to fill (flushIntervalMs)

    await flags.flushImpressions()
    expect(http.posts).toEqual([{ url: `${front.url}/api/environments/${f.envId}/impressions`, items: 3, status: 204 }])
    expect(flags.impressionStatus()).toMatchObject({
      queued: 0,
      delivered: 3,
      dropped: 0,
      failures: 0,
      lastError: null,
    })
    const { items, total } = await stored()
    expect(total).toBe(3)
    expect(items.map(({ id: _, evaluated_at: __, ...rest }: Record<string, unknown>) => rest)).toEqual([
      { flag_key: 'limits', user_id: null, value: '{"max":3}', context: null },
      { flag_key: 'banner', user_id: '42', value: 'blue', context: { user_id: 42 } },
      { flag_key: 'checkout', user_id: 'u-1', value: 'true', context: { user_id: 'u-1', country: 'DE' } },
    ])
    const stats = (await f.stats()).body
    expect(stats.find((s: { flag_key: string }) => s.flag_key === 'checkout')).toMatchObject({
      total: 1,
      true_count: 1,
      unique_users: 1,
    })
  })

  it('sends a lone evaluation once the flush interval has passed, also after the queue ran empty', async () => {
    const http = recordingFetch()
    const flags = client({ fetch: http.impl, impressions: { flushIntervalMs: 150 } })
    await flags.ready()
    await new Promise((r) => setTimeout(r, 200)) // the reporter has found its queue empty and sleeps
    flags.isEnabled('checkout', { user_id: 'first' })
    await expect.poll(() => flags.impressionStatus().delivered, { timeout: 5000 }).toBe(1)
    await new Promise((r) => setTimeout(r, 200))
    const started = Date.now()
    flags.isEnabled('checkout', { user_id: 'second' })
    flags.isEnabled('checkout', { user_id: 'third' })
    await expect.poll(() => flags.impressionStatus().delivered, { timeout: 5000 }).toBe(3)
    expect(Date.now() - started).toBeGreaterThanOrEqual(140) // waited for the batch to fill
    expect(http.posts.map((p) => p.items)).toEqual([1, 2])
  })

  it('buffers in IndexedDB while offline and delivers in batches of at most 500 when back online', async () => {
    const http = recordingFetch()
    const online = manualOnlineSource(true)
    const flags = client({ fetch: http.impl, online, impressions: { flushIntervalMs: 0 } })
    await flags.ready()
    online.setOnline(false)
    for (let i = 0; i < 1200; i++) flags.isEnabled('checkout', { user_id: `u${i % 40}` })
    await expect.poll(() => flags.impressionStatus().queued).toBe(1200)
    await new Promise((r) => setTimeout(r, 100))
    expect(http.posts).toEqual([])

    online.setOnline(true)
    await expect.poll(() => flags.impressionStatus().delivered, { timeout: 10_000 }).toBe(1200)
    expect(flags.impressionStatus().queued).toBe(0)
    expect((await stored()).total).toBe(1200)
    expect(http.posts.map((p) => p.items)).toEqual([500, 500, 200])
    expect(http.posts.every((p) => p.status === 204)).toBe(true)
    const stats = (await f.stats()).body
    expect(stats).toEqual([expect.objectContaining({ flag_key: 'checkout', total: 1200, unique_users: 40 })])
  })

  it('retries with the backoff and a longer Retry-After, keeping the batch until a 2xx', async () => {
    const http = recordingFetch()
    const delays: number[] = []
    const clock: Clock = {
      ...systemClock,
      setTimeout: (cb, ms) => {
        if (ms !== 30_000) delays.push(ms) // request timeouts aside
        return systemClock.setTimeout(cb, ms)
      },
    }
    const flags = client({
      fetch: http.impl,
      clock,
      random: () => 0,
      impressions: { flushIntervalMs: 0, retry: { baseMs: 40, factor: 2, jitter: 0.3, maxMs: 10_000 } },
    })
    await flags.ready()
    http.failures.push('network', { status: 500 }, { status: 503, retryAfter: '1' }, { status: 429 })
    for (let i = 0; i < 7; i++) flags.isEnabled('checkout', { user_id: `u${i}` })
    // While failing: kept, counted, and the error shown (the Retry-After alone holds it back a second).
    await expect.poll(() => flags.impressionStatus().failures).toBeGreaterThanOrEqual(1)
    expect(flags.impressionStatus()).toMatchObject({
      queued: 7,
      delivered: 0,
      nextAttemptAt: expect.any(Number),
      lastError: expect.objectContaining({ message: expect.any(String) }),
    })
    await expect.poll(() => flags.impressionStatus().delivered, { timeout: 10_000 }).toBe(7)
    expect((await stored()).total).toBe(7)
    expect(http.posts.map((p) => [p.items, p.status])).toEqual([
      [7, 'network error'],
      [7, 500],
      [7, 503],
      [7, 429],
      [7, 204],
    ])
    // computeBackoff with random 0: 40, 80, then Retry-After 1 s beats 160, then 320. The loop sleeps until the
    // attempt is due, measured a moment after the failure, so each wait is at most a few ms short of the policy's.
    const expected = [40, 80, 1000, 320]
    expect(delays).toHaveLength(expected.length)
    delays.forEach((ms, i) => {
      expect(ms).toBeLessThanOrEqual(expected[i] as number)
      expect(ms).toBeGreaterThanOrEqual((expected[i] as number) - 5)
    })
    expect(flags.impressionStatus()).toMatchObject({ queued: 0, delivered: 7, failures: 0, lastError: null })
  })

  it('delivers after a restart what the previous session queued offline (same IndexedDB)', async () => {
    const indexedDB = new IDBFactory()
    const online = manualOnlineSource(true)
    const first = client({ indexedDB, online, impressions: { flushIntervalMs: 0 } })
    await first.ready()
    online.setOnline(false)
    for (let i = 0; i < 30; i++) first.getValue('banner', { user_id: `u${i}` }, 'x')
    await first.close()
    expect((await stored()).total).toBe(0)

    const http = recordingFetch()
    const second = client({ indexedDB, fetch: http.impl, impressions: { flushIntervalMs: 60_000 } })
    await expect.poll(() => second.impressionStatus().delivered, { timeout: 10_000 }).toBe(30)
    expect(second.impressionStatus().queued).toBe(0)
    expect((await stored()).total).toBe(30)
    expect(http.posts).toEqual([expect.objectContaining({ items: 30, status: 204 })])
  })

  it('two clients on one IndexedDB (two tabs) deliver every impression exactly once', async () => {
    const indexedDB = new IDBFactory()
    const online = manualOnlineSource(true)
    const a = client({ indexedDB, online, impressions: { flushIntervalMs: 0, maxBatch: 50 } })
    const b = client({ indexedDB, online, impressions: { flushIntervalMs: 0, maxBatch: 50 } })
    await Promise.all([a.ready(), b.ready()])
    online.setOnline(false)
    for (let i = 0; i < 300; i++) {
      a.isEnabled('checkout', { user_id: `a${i}` })
      b.isEnabled('checkout', { user_id: `b${i}` })
    }
    await expect.poll(() => a.impressionStatus().queued + b.impressionStatus().queued).toBeGreaterThanOrEqual(600)
    online.setOnline(true)
    await expect
      .poll(() => a.impressionStatus().delivered + b.impressionStatus().delivered, { timeout: 15_000 })
      .toBe(600)
    await new Promise((r) => setTimeout(r, 300))
    expect((await stored()).total).toBe(600)
    expect(a.impressionStatus().delivered + b.impressionStatus().delivered).toBe(600)
    expect(a.impressionStatus().delivered).toBeGreaterThan(0)
    expect(b.impressionStatus().delivered).toBeGreaterThan(0)
  })

  it('halves the batch when the body is too large (413) and drops what the service rejects', async () => {
    const http = recordingFetch()
    const flags = client({ fetch: http.impl, impressions: { flushIntervalMs: 0 } })
    await flags.ready()
    // ~1.14 KB per impression against the service's 64 KB BODY_LIMIT: 120 and 60 are too many, 30 fit.
    for (let i = 0; i < 120; i++) flags.isEnabled('checkout', { user_id: `u${i}`, note: 'n'.repeat(1000) })
    await expect.poll(() => flags.impressionStatus().delivered, { timeout: 10_000 }).toBe(120)
    expect((await stored()).total).toBe(120)
    expect(http.posts.map((p) => [p.items, p.status])).toEqual([
      [120, 413],
      [60, 413],
      [30, 204],
      [30, 204],
      [30, 204],
      [30, 204],
    ])
    expect(flags.impressionStatus()).toMatchObject({ delivered: 120, dropped: 0, queued: 0 })
    await flags.close()

    // A key of another environment: the service answers 403 and the batch is dropped, not retried.
    const rejectedHttp = recordingFetch()
    const staging = await f.h.call(`/api/projects/${f.h.defaultProjectId}/keys`, { as: f.h.admin })
    expect(staging.status).toBe(200)
    const wrongKey = (
      await f.h.call(`/api/projects/${f.h.defaultProjectId}/keys`, {
        method: 'POST',
        as: f.h.admin,
        body: { name: 'staging 2', environment_id: f.stagingId },
      })
    ).body.key as string
    const rejected = client({ fetch: rejectedHttp.impl, sdkKey: wrongKey, impressions: { flushIntervalMs: 0 } })
    await rejected.ready()
    for (let i = 0; i < 5; i++) rejected.isEnabled('checkout', { user_id: `w${i}` })
    await expect.poll(() => rejected.impressionStatus().dropped).toBe(5)
    expect(rejected.impressionStatus()).toMatchObject({
      queued: 0,
      delivered: 0,
      failures: 0,
      lastError: { status: 403, message: expect.stringMatching(/bound to another environment/) },
    })
    expect(rejectedHttp.posts).toEqual([expect.objectContaining({ items: 5, status: 403 })])
    expect((await stored()).total).toBe(120)
    // The right key still reads them; the wrong one cannot.
    expect((await f.list('', bearer(wrongKey))).status).toBe(403)
  })

  it('records nothing when turned off, sampled out, without a key, or against a flat API server', async () => {
    const http = recordingFetch()
    const off = client({ fetch: http.impl, impressions: false })
    const sampledOut = client({ fetch: http.impl, impressions: { sampleRate: 0 } })
    const keyless = client({ fetch: http.impl, sdkKey: undefined })
    await Promise.all([off.ready(), sampledOut.ready(), keyless.ready()])
    const doc2 = await startFrontServer(f.h.url, { environmentId: true, flags: FLAGS })
    try {
      const flat = client({ fetch: http.impl, streamUrl: `${doc2.url}/stream`, bootstrapIdleMs: 20 })
      await flat.ready()
      expect(flat.status().environmentId).toBeNull()
      for (const c of [off, sampledOut, keyless, flat]) {
        expect(c.isEnabled('checkout', { user_id: 'u' })).toBe(true)
        await c.flushImpressions()
      }
      expect(off.impressionStatus().enabled).toBe(false)
      expect(keyless.impressionStatus().enabled).toBe(false)
      for (const c of [off, sampledOut, keyless, flat]) expect(c.impressionStatus().queued).toBe(0)
      expect(http.posts).toEqual([])
      expect((await stored()).total).toBe(0)
      await flat.close()
    } finally {
      await doc2.close()
    }
  })
})
