import { createFlagClient, type FlagClient } from '@flagsync/sync-client'
import { DIALECTS } from '@flagsync/test-support/databases'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { type Harness, startHarness } from '../harness.js'
import { createProject, flagsOf, putFlag } from './support.js'

/** The flag client of @flagsync/sync-client (implemented by @flagsync/flag-client) against this service's stream. */
describe.each(DIALECTS)('the flag client against the service on %s', (dialect) => {
  let h: Harness
  const clients: FlagClient[] = []
  const client = (options: Omit<Parameters<typeof createFlagClient>[0], 'persist'>) => {
    const c = createFlagClient({ persist: false, reconnect: { baseMs: 20, maxMs: 100 }, ...options })
    clients.push(c)
    return c
  }
  beforeAll(async () => {
    h = await startHarness(dialect)
  })
  afterEach(async () => {
    for (const c of clients.splice(0)) await c.close()
  })
  afterAll(async () => {
    await h?.dispose()
  })

  it('bootstraps from /stream, evaluates segment-expanded typed flags, and follows its environment only', async () => {
    const p = await createProject(h)
    await h.call(`/api/projects/${p.id}/segments`, {
      method: 'POST',
      as: h.admin,
      body: {
        key: 'staff',
        name: 'Staff',
        rules: [{ attribute: 'email', operator: 'ends_with', values: ['@acme.test'] }],
      },
    })
    await putFlag(h, p.production, {
      key: 'greeting',
      is_enabled: true,
      flag_type: 'string',
      default_value: 'hello',
      rules: [{ segment_key: 'staff', variant: 'hi colleague' }],
    })
    await putFlag(h, p.production, { key: 'checkout', is_enabled: true, prerequisites: [{ flag_key: 'greeting' }] })
    const flags = client({ streamUrl: `${h.url}/stream`, sdkKey: p.sdkKey })
    await flags.ready()
    expect(flags.status()).toMatchObject({ state: 'live', source: 'stream', environmentId: p.production })
    expect(flags.allFlags().map((f) => f.key)).toEqual(['checkout', 'greeting'])
    expect(flags.getValue('greeting', { user_id: 'u1', email: 'ann@acme.test' }, 'fallback')).toBe('hi colleague')
    expect(flags.getValue('greeting', { user_id: 'u1', email: 'ann@else.test' }, 'fallback')).toBe('hello')
    expect(flags.isEnabled('checkout', { user_id: 'u1' })).toBe(true)

    await flagsOf(h, p.production).patch('greeting', { is_enabled: false })
    await expect.poll(() => flags.isEnabled('checkout', { user_id: 'u1' })).toBe(false)
    await putFlag(h, p.staging, { key: 'staging-flag', is_enabled: true })
    await flagsOf(h, p.production).delete('checkout')
    await expect.poll(() => flags.allFlags().map((f) => f.key)).toEqual(['greeting'])
  })

  it('sends the key as ?sdk_key= with sdkKeyInQuery', async () => {
    const p = await createProject(h)
    await putFlag(h, p.production, { key: 'q', is_enabled: true })
    const flags = client({ streamUrl: `${h.url}/stream`, sdkKey: p.sdkKey, sdkKeyInQuery: true })
    await flags.ready()
    expect(flags.status()).toMatchObject({ source: 'stream', environmentId: p.production })
    expect(flags.isEnabled('q')).toBe(true)
    const wrong = client({ streamUrl: `${h.url}/stream`, sdkKey: 'sk_live_wrong', sdkKeyInQuery: true })
    await expect.poll(() => wrong.status().lastError?.status).toBe(401)
  })

  it('polls the real /flags/snapshot after 3 failed stream connections, and stops once the stream is back', async () => {
    const p = await createProject(h)
    await putFlag(h, p.production, { key: 'snap', is_enabled: true })
    let streamUp = false
    let streamAttempts = 0
    let snapshotPolls = 0
    const fetchThrough: typeof fetch = async (input, init) => {
      const url = String(input instanceof Request ? input.url : input)
      if (url.includes('/stream')) {
        streamAttempts++
        if (!streamUp) throw new TypeError('network down')
      }
      if (url.includes('/flags/snapshot')) snapshotPolls++
      return fetch(input, init)
    }
    const flags = client({
      streamUrl: `${h.url}/stream`,
      sdkKey: p.sdkKey,
      snapshotUrl: `${h.url}/flags/snapshot`,
      snapshotIntervalMs: 30,
      fetch: fetchThrough,
    })
    await flags.ready()
    expect(flags.status()).toMatchObject({ state: 'polling', source: 'snapshot' })
    expect(streamAttempts).toBeGreaterThanOrEqual(3)
    expect(flags.isEnabled('snap')).toBe(true)

    // Changes reach it through the snapshot while the stream is down.
    await putFlag(h, p.production, { key: 'later', is_enabled: true })
    await expect.poll(() => flags.getFlag('later')).toBeDefined()

    streamUp = true
    await expect.poll(() => flags.status()).toMatchObject({ state: 'live', source: 'stream' })
    const polls = snapshotPolls
    await new Promise((r) => setTimeout(r, 150))
    expect(snapshotPolls).toBe(polls)
  })

  it('with the key in the query, the client adds it to the snapshot URL too (the service accepts ?sdk_key= there)', async () => {
    const p = await createProject(h)
    await putFlag(h, p.production, { key: 'via-query', is_enabled: true })
    const flags = client({
      streamUrl: `${h.url}/no-such-stream`,
      sdkKey: p.sdkKey,
      sdkKeyInQuery: true,
      snapshotUrl: `${h.url}/flags/snapshot`,
      snapshotIntervalMs: 30,
    })
    await flags.ready()
    expect(flags.status()).toMatchObject({ state: 'polling', source: 'snapshot', lastError: { status: 404 } })
    expect(flags.isEnabled('via-query')).toBe(true)
  })
})
