/**
 * The server provider's optional impressions, with the real @openfeature/server-sdk against a real flag service on
 * SQLite and PostgreSQL: evaluations stay memory lookups and are delivered in batches to the ingest route (visible in
 * the list and stats), a service that is down gets them once it is back, the queue is bounded, `OpenFeature.close()`
 * flushes, a server without the ingest route stops reporting with one warning, and without the option nothing is sent.
 */
import { FlagsyncServerProvider, type FlagsyncServerProviderOptions } from '@flagsync/server-provider'
import { DIALECTS } from '@flagsync/test-support/databases'
import { OpenFeature, ProviderStatus } from '@openfeature/server-sdk'
import { afterEach, describe, expect, it } from 'vitest'
import { createProject, type Project, putFlag } from '../../packages/flag-service/test/flags/support.js'
import { type Harness, type Json, startHarness } from '../../packages/flag-service/test/harness.js'

const harnesses: Harness[] = []
afterEach(async () => {
  await OpenFeature.close()
  for (const h of harnesses.splice(0).reverse()) await h.dispose()
})

const CHECKOUT = {
  key: 'checkout',
  is_enabled: true,
  default_value: false,
  rules: [{ attribute: 'plan', operator: 'equals', values: ['pro'], variant: true }],
}

function provider(h: Harness, p: Project, impressions: FlagsyncServerProviderOptions['impressions']) {
  return new FlagsyncServerProvider({
    streamUrl: `${h.url}/stream`,
    sdkKey: p.sdkKey,
    reconnect: { baseMs: 20, maxMs: 100, jitter: 0 },
    impressions,
  })
}

/** The impression POSTs the service receives from now on. */
function impressionPosts(h: Harness): string[] {
  const posts: string[] = []
  h.server.server.prependListener('request', (req) => {
    if (req.method === 'POST' && req.url?.endsWith('/impressions')) posts.push(req.url)
  })
  return posts
}

async function listed(h: Harness, envId: string): Promise<{ total: number; items: Json[] }> {
  const res = await h.call(`/api/environments/${envId}/impressions?limit=200`, { as: h.admin })
  expect(res.status).toBe(200)
  return res.body as { total: number; items: Json[] }
}

/** `n` evaluations of `checkout` by users `u-0`…, every third on the pro plan (served true). */
async function evaluateCheckout(n: number, from = 0): Promise<void> {
  const of = OpenFeature.getClient()
  for (let i = from; i < from + n; i++) {
    await of.getBooleanValue('checkout', false, { targetingKey: `u-${i}`, plan: i % 3 === 0 ? 'pro' : 'free' })
  }
}

describe.each(DIALECTS)('FlagsyncServerProvider impressions against the flag service on %s', (dialect) => {
  async function start(options: Parameters<typeof startHarness>[1] = {}): Promise<Harness> {
    const h = await startHarness(dialect, options)
    harnesses.push(h)
    return h
  }

  async function ready(impressions: FlagsyncServerProviderOptions['impressions']) {
    const h = await start()
    const p = await createProject(h)
    await putFlag(h, p.production, CHECKOUT)
    const posts = impressionPosts(h)
    const sp = provider(h, p, impressions)
    await OpenFeature.setProviderAndWait(sp)
    return { h, p, posts, sp }
  }

  it('stores one impression per evaluation, in list and stats, sent in batches and never per evaluation', async () => {
    const { h, p, posts, sp } = await ready({ flushIntervalMs: 300, maxBatch: 10 })
    await evaluateCheckout(25)
    // Evaluations answered from memory: the impressions wait in the queue.
    expect(posts).toEqual([])
    expect(sp.impressionStatus()).toMatchObject({ enabled: true, queued: 25, delivered: 0 })

    await expect.poll(async () => (await listed(h, p.production)).total, { timeout: 5000 }).toBe(25)
    // Two full batches at once, the last five after the flush interval.
    expect(posts).toEqual(Array(3).fill(`/api/environments/${p.production}/impressions`))
    expect(sp.impressionStatus()).toMatchObject({ queued: 0, delivered: 25, dropped: 0, failures: 0 })
    const items = (await listed(h, p.production)).items
    const u3 = items.find((item) => item.user_id === 'u-3')
    expect(u3).toMatchObject({ flag_key: 'checkout', value: 'true', context: { user_id: 'u-3', plan: 'pro' } })
    expect(items.find((item) => item.user_id === 'u-4')).toMatchObject({ value: 'false' })

    const stats = await h.call(`/api/environments/${p.production}/impressions/stats`, { as: h.admin })
    expect(stats.body).toEqual([
      expect.objectContaining({ flag_key: 'checkout', total: 25, true_count: 9, false_count: 16, unique_users: 25 }),
    ])
  })

  it('keeps impressions while the service is down and delivers them once it is back', async () => {
    const { h, p, sp } = await ready({ flushIntervalMs: 50, retry: { baseMs: 50, maxMs: 200, jitter: 0 } })
    await h.stop()
    await expect.poll(() => OpenFeature.getClient().providerStatus).toBe(ProviderStatus.STALE)
    await evaluateCheckout(6)
    await expect.poll(() => sp.impressionStatus().failures, { timeout: 5000 }).toBeGreaterThanOrEqual(2)
    expect(sp.impressionStatus()).toMatchObject({ queued: 6, delivered: 0, dropped: 0 })

    const restarted = await start({ databaseUrl: h.databaseUrl, env: { PORT: String(h.server.port) } })
    await expect.poll(async () => (await listed(restarted, p.production)).total, { timeout: 5000 }).toBe(6)
    expect(sp.impressionStatus()).toMatchObject({ queued: 0, delivered: 6, failures: 0, lastError: null })
  })

  it('waits out the backoff while the service is down, however many impressions arrive', async () => {
    const h = await start()
    const p = await createProject(h)
    await putFlag(h, p.production, CHECKOUT)
    const attempts: number[] = []
    const sp = new FlagsyncServerProvider({
      streamUrl: `${h.url}/stream`,
      sdkKey: p.sdkKey,
      reconnect: { baseMs: 20, maxMs: 100, jitter: 0 },
      fetch: (input, init) => {
        if (String(input).endsWith('/impressions')) attempts.push(Date.now())
        return fetch(input, init)
      },
      impressions: { maxBatch: 2, retry: { baseMs: 1500, jitter: 0 } },
    })
    await OpenFeature.setProviderAndWait(sp)
    await h.stop()
    await evaluateCheckout(2)
    await expect.poll(() => sp.impressionStatus().failures).toBe(1)
    for (let i = 0; i < 10; i++) {
      await evaluateCheckout(2, 2 + 2 * i)
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
    expect(attempts).toHaveLength(1)
    expect(sp.impressionStatus()).toMatchObject({ queued: 22, failures: 1 })
  })

  it('holds at most maxQueue impressions, dropping the oldest and counting them', async () => {
    const { h, p, sp } = await ready({ flushIntervalMs: 50, maxQueue: 4, retry: { baseMs: 50, maxMs: 100 } })
    await h.stop()
    await evaluateCheckout(10)
    expect(sp.impressionStatus()).toMatchObject({ queued: 4, dropped: 6 })

    const restarted = await start({ databaseUrl: h.databaseUrl, env: { PORT: String(h.server.port) } })
    await expect.poll(async () => (await listed(restarted, p.production)).total, { timeout: 5000 }).toBe(4)
    const users = (await listed(restarted, p.production)).items.map((item) => item.user_id).sort()
    expect(users).toEqual(['u-6', 'u-7', 'u-8', 'u-9'])
  })

  it('delivers what is queued on OpenFeature.close()', async () => {
    const { h, p, posts, sp } = await ready({ flushIntervalMs: 60_000 })
    await evaluateCheckout(7)
    expect(posts).toEqual([])
    await OpenFeature.close()
    expect(posts).toHaveLength(1)
    expect((await listed(h, p.production)).total).toBe(7)
    expect(sp.impressionStatus()).toMatchObject({ enabled: false, queued: 0, delivered: 7 })
  })

  it('sends no impression without the option', async () => {
    const { h, p, posts, sp } = await ready(undefined)
    await evaluateCheckout(12)
    await OpenFeature.close()
    expect(posts).toEqual([])
    expect((await listed(h, p.production)).total).toBe(0)
    expect(sp.impressionStatus().enabled).toBe(false)
  })

  it('stops reporting with one warning where the base URL has no impression ingest (404)', async () => {
    const warnings: string[] = []
    const h0 = await start()
    const { h, posts, sp } = await ready({
      baseUrl: `${h0.url}/elsewhere/`,
      flushIntervalMs: 20,
      onWarning: (message) => warnings.push(message),
    })
    await evaluateCheckout(3)
    await expect.poll(() => sp.impressionStatus().enabled).toBe(false)
    await evaluateCheckout(3, 3)
    await OpenFeature.close()
    expect(warnings).toHaveLength(1)
    expect(warnings[0]).toMatch(/404.*reporting stopped/)
    expect(sp.impressionStatus()).toMatchObject({ queued: 0, delivered: 0, dropped: 3 })
    expect(posts).toEqual([])
    expect(h.url).not.toBe(h0.url)
  })
})

describe('FlagsyncServerProvider impressions options', () => {
  it('refuses impressions without an SDK key, and a bad batch size', () => {
    expect(() => new FlagsyncServerProvider({ streamUrl: 'http://127.0.0.1:1/stream', impressions: true })).toThrow(
      /impressions needs options.sdkKey/,
    )
    expect(
      () =>
        new FlagsyncServerProvider({
          streamUrl: 'http://127.0.0.1:1/stream',
          sdkKey: 'k',
          impressions: { maxBatch: 501 },
        }),
    ).toThrow(/maxBatch must be an integer from 1 to 500/)
  })
})
