import {
  createFlagClient,
  createRemoteFlagClient,
  type KeyValueStorage,
  type RemoteFlagClient,
} from '@flagsync/flag-client'
import { IDBFactory, IDBKeyRange } from 'fake-indexeddb'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { createProject, flagsOf, putFlag } from '../../flag-service/test/flags/support.js'
import { type Harness, startHarness } from '../../flag-service/test/harness.js'

/** A `fetch` that logs every request and keeps every byte the client receives (bodies and stream chunks). */
function recordingFetch() {
  const requests: string[] = []
  const received: string[] = []
  const decoder = new TextDecoder()
  const fetchImpl: typeof fetch = async (input, init) => {
    const url = input instanceof Request ? input.url : String(input)
    requests.push(`${init?.method ?? 'GET'} ${new URL(url).pathname}`)
    const res = await fetch(input, init)
    if (!res.body) return res
    const tee = res.body.pipeThrough(
      new TransformStream<Uint8Array, Uint8Array>({
        transform(chunk, controller) {
          received.push(decoder.decode(chunk, { stream: true }))
          controller.enqueue(chunk)
        },
      }),
    )
    return new Response(tee, { status: res.status, statusText: res.statusText, headers: res.headers })
  }
  return { fetch: fetchImpl, requests, received }
}

function memoryStorage(): KeyValueStorage & { map: Map<string, string> } {
  const map = new Map<string, string>()
  return {
    map,
    getItem: (k) => map.get(k) ?? null,
    setItem: (k, v) => void map.set(k, v),
    removeItem: (k) => void map.delete(k),
  }
}

describe('createRemoteFlagClient against the flag service with a client key', () => {
  let h: Harness
  const clients: RemoteFlagClient[] = []
  beforeAll(async () => {
    h = await startHarness('sqlite')
  })
  afterEach(async () => {
    for (const c of clients.splice(0)) await c.close()
  })
  afterAll(async () => {
    await h?.dispose()
  })

  /** A project whose Production has a segment of an email list, a flag targeting it and one targeting another user. */
  async function seeded() {
    const p = await createProject(h)
    const segment = await h.call(`/api/projects/${p.id}/segments`, {
      method: 'POST',
      as: h.admin,
      body: {
        key: 'insiders',
        name: 'Insiders',
        rules: [{ attribute: 'email', operator: 'equals', values: ['secret-ann@acme.test', 'secret-bob@acme.test'] }],
      },
    })
    expect(segment.status).toBe(200)
    await putFlag(h, p.production, { key: 'banner', is_enabled: true })
    await putFlag(h, p.production, {
      key: 'greeting',
      is_enabled: true,
      flag_type: 'string',
      default_value: 'hello',
      rules: [
        { segment_key: 'insiders', variant: 'insider-only-greeting' },
        { attribute: 'user_id', operator: 'equals', values: ['u-vip'], variant: 'vip-only-greeting' },
      ],
    })
    const key = await h.call(`/api/projects/${p.id}/keys`, {
      method: 'POST',
      as: h.admin,
      body: { name: 'page', environment_id: p.production, kind: 'client' },
    })
    expect(key.status).toBe(200)
    expect(key.body.key).toMatch(/^pk_live_/)
    return { p, clientKey: key.body.key as string }
  }

  const start = (clientKey: string, extra: Partial<Parameters<typeof createRemoteFlagClient>[0]> = {}) => {
    const client = createRemoteFlagClient({ baseUrl: h.url, clientKey, context: { user_id: 'u-1' }, ...extra })
    clients.push(client)
    return client
  }

  it('serves the values of its context, a REST PATCH over the refresh stream, and never a rule or segment', async () => {
    const { p, clientKey } = await seeded()
    const rec = recordingFetch()
    const flags = start(clientKey, { fetch: rec.fetch, storage: null })
    await flags.ready()
    expect(flags.isEnabled('banner')).toBe(true)
    expect(flags.evaluate('greeting')).toMatchObject({ value: 'hello', reason: 'DEFAULT', flagFound: true })
    expect(flags.evaluate('missing')).toMatchObject({ flagFound: false, errorCode: 'FLAG_NOT_FOUND' })
    await expect.poll(() => rec.requests.some((r) => r.startsWith('GET /ofrep/v1/events'))).toBe(true)

    const before = rec.requests.length
    for (let i = 0; i < 50; i++) flags.evaluate('greeting')
    expect(rec.requests.length).toBe(before) // evaluations answer from the fetched values

    expect((await flagsOf(h, p.production).patch('banner', { is_enabled: false })).status).toBe(200)
    await expect.poll(() => flags.isEnabled('banner'), { timeout: 10_000 }).toBe(false)
    expect(flags.status().state).toBe('live')

    const text = rec.received.join('')
    expect(text).toContain('"banner"')
    for (const secret of [
      'secret-ann',
      'secret-bob',
      'insiders',
      'insider-only-greeting',
      'vip-only-greeting',
      'u-vip',
    ]) {
      expect(text).not.toContain(secret)
    }
    for (const word of ['"rules"', '"segment', '"operator"', '"attribute"', '"values"'])
      expect(text).not.toContain(word)
  })

  it('records what a rules-mode client receives: the segment and the other user are there (the recorder sees them)', async () => {
    const { p } = await seeded()
    const rec = recordingFetch()
    const rules = createFlagClient({
      streamUrl: `${h.url}/stream`,
      sdkKey: p.sdkKey,
      fetch: rec.fetch,
      persist: false,
      impressions: false,
    })
    try {
      await rules.ready()
      const text = rec.received.join('')
      for (const secret of ['secret-ann', 'u-vip', 'vip-only-greeting']) expect(text).toContain(secret)
    } finally {
      await rules.close()
    }
  })

  it('reports impressions to its environment with the client key', async () => {
    const { p, clientKey } = await seeded()
    const rec = recordingFetch()
    const flags = start(clientKey, { fetch: rec.fetch, storage: null, environmentId: p.production })
    await flags.ready()
    flags.evaluate('greeting')
    await flags.flushImpressions()
    expect(flags.impressionStatus()).toMatchObject({ enabled: true, delivered: 1, dropped: 0, lastError: null })
    expect(rec.requests).toContain(`POST /api/environments/${p.production}/impressions`)
    const list = await h.call(`/api/environments/${p.production}/impressions`, { as: h.admin })
    expect(list.body.items).toEqual([expect.objectContaining({ flag_key: 'greeting', user_id: 'u-1', value: 'hello' })])
  })

  it('keeps the impressions it could not deliver in IndexedDB: the client of the next page load delivers them', async () => {
    const { p, clientKey } = await seeded()
    const indexedDB = new IDBFactory()
    const durable = { storage: null, environmentId: p.production, indexedDB, IDBKeyRange }
    // The first page cannot reach the impression route (offline for it): the record waits in IndexedDB.
    const unreachable: typeof fetch = (input, init) =>
      String(input instanceof Request ? input.url : input).includes('/impressions')
        ? Promise.reject(new TypeError('fetch failed'))
        : fetch(input, init)
    const first = start(clientKey, { ...durable, fetch: unreachable })
    await first.ready()
    first.evaluate('greeting')
    await expect.poll(() => first.impressionStatus()).toMatchObject({ storage: 'indexeddb', queued: 1, delivered: 0 })
    await first.close()

    const next = start(clientKey, durable)
    await next.ready()
    await next.flushImpressions()
    expect(next.impressionStatus()).toMatchObject({ storage: 'indexeddb', delivered: 1, dropped: 0 })
    const list = await h.call(`/api/environments/${p.production}/impressions`, { as: h.admin })
    expect(list.body.items).toEqual([expect.objectContaining({ flag_key: 'greeting', user_id: 'u-1', value: 'hello' })])
  })

  it('re-fetches on setContext and serves the new context its targeted value', async () => {
    const { clientKey } = await seeded()
    const rec = recordingFetch()
    const flags = start(clientKey, { fetch: rec.fetch, storage: null })
    await flags.ready()
    expect(flags.getValue('greeting', undefined, 'x')).toBe('hello')
    const posts = () => rec.requests.filter((r) => r === 'POST /ofrep/v1/evaluate/flags').length
    const before = posts()
    await flags.setContext({ user_id: 'u-2', email: 'secret-ann@acme.test' })
    expect(posts()).toBe(before + 1)
    expect(flags.getValue('greeting', undefined, 'x')).toBe('insider-only-greeting')
    expect(flags.context()).toEqual({ user_id: 'u-2', email: 'secret-ann@acme.test' })
    await flags.setContext({ email: 'secret-ann@acme.test', user_id: 'u-2' })
    expect(posts()).toBe(before + 1) // the same context, keys in another order: nothing to fetch
  })

  it('starts offline from the values stored for its context, answering at creation', async () => {
    const { clientKey } = await seeded()
    const storage = memoryStorage()
    const first = start(clientKey, { storage })
    await first.ready()
    await first.setContext({ user_id: 'u-vip' })
    expect(first.getValue('greeting', undefined, 'x')).toBe('vip-only-greeting')
    await first.close()
    expect([...storage.map.values()].join('')).not.toContain('u-vip') // stored under a hash of the context

    const offline: typeof fetch = () => Promise.reject(new TypeError('network down'))
    const again = start(clientKey, { storage, fetch: offline, context: { user_id: 'u-vip' } })
    expect(again.status().source).toBe('cache')
    expect(again.getValue('greeting', undefined, 'x')).toBe('vip-only-greeting')
    const other = start(clientKey, { storage, fetch: offline, context: { user_id: 'u-1' } })
    expect(other.getValue('greeting', undefined, 'x')).toBe('hello')
    const unknown = start(clientKey, { storage, fetch: offline, context: { user_id: 'nobody' } })
    expect(unknown.status().source).toBe('none')
    expect(unknown.getFlag('greeting')).toBeUndefined()
  })

  it('rejects edits: local edits are a rules-mode feature', async () => {
    const { clientKey } = await seeded()
    const flags = start(clientKey, { storage: null })
    await expect(flags.updateFlag('banner', { is_enabled: false })).rejects.toThrow(/rules-mode/)
  })
})
