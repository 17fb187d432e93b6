import { DIALECTS } from '@flagsync/test-support/databases'
import { ofrepClient, ofrepPost, openRefresh, refetches } from '@flagsync/test-support/ofrep'
import type { SseReader } from '@flagsync/test-support/sse-reader'
import { startTestServer, type TestServer } from '@flagsync/test-support/test-server'
import { afterEach, describe, expect, it } from 'vitest'

const KEY = 'flat-ofrep-key'

describe.each(DIALECTS)('OFREP on the flat API on %s', (dialect) => {
  const servers: TestServer[] = []
  const readers: SseReader[] = []
  afterEach(async () => {
    for (const r of readers.splice(0)) r.close()
    for (const s of servers.splice(0)) await s.dispose()
  })
  async function start(clientKey?: string) {
    const server = await startTestServer({ dialect, sdkKey: KEY, ...(clientKey ? { clientKey } : {}) })
    servers.push(server)
    const put = async (flag: Record<string, unknown>) => {
      const res = await server.request('/api/flags', { method: 'POST', body: flag })
      expect(res.status).toBe(200)
    }
    const patch = async (key: string, body: Record<string, unknown>) => {
      const res = await server.request(`/api/flags/${key}`, { method: 'PATCH', body })
      expect(res.status).toBe(200)
    }
    const post = (path: string, body: unknown, headers: Record<string, string> = { Authorization: `Bearer ${KEY}` }) =>
      ofrepPost(`${server.url}/ofrep/v1${path}`, body, headers)
    return { server, put, patch, post }
  }

  it('answers the published server provider: values, variants, reasons, FLAG_NOT_FOUND and a PATCH', async () => {
    const { server, put, patch } = await start()
    await put({ key: 'banner', is_enabled: true })
    await put({
      key: 'beta',
      is_enabled: true,
      rollout_percentage: 0,
      rules: [{ attribute: 'country', operator: 'equals', values: ['DE'] }],
    })
    const client = await ofrepClient(server.url, KEY)
    const banner = await client.getBooleanDetails('banner', false, { targetingKey: 'u-1' })
    expect(banner).toMatchObject({ value: true, reason: 'STATIC', variant: 'true' })
    expect(banner.flagMetadata.revision).toBe(1)
    expect(await client.getBooleanDetails('beta', false, { targetingKey: 'u-1', country: 'DE' })).toMatchObject({
      value: true,
      reason: 'TARGETING_MATCH',
      variant: 'true',
    })
    expect(await client.getBooleanDetails('beta', true, { targetingKey: 'u-1', country: 'FR' })).toMatchObject({
      value: false,
      reason: 'SPLIT',
      variant: 'false',
    })
    expect(await client.getBooleanDetails('missing', false, { targetingKey: 'u-1' })).toMatchObject({
      value: false,
      reason: 'ERROR',
      errorCode: 'FLAG_NOT_FOUND',
    })
    await patch('banner', { is_enabled: false })
    expect(await client.getBooleanDetails('banner', true, { targetingKey: 'u-1' })).toMatchObject({
      value: false,
      reason: 'DISABLED',
    })
  })

  it('answers every documented status with the OFREP error shape and {error, code}', async () => {
    const { put, post, server } = await start()
    await put({ key: 'split', is_enabled: true, rollout_percentage: 50 })
    expect((await post('/evaluate/flags/split', { context: { targetingKey: 'u' } })).status).toBe(200)
    const viaApiKey = await post('/evaluate/flags/split', { context: { targetingKey: 'u' } }, { 'X-API-Key': KEY })
    expect(viaApiKey.status).toBe(200)

    const unauthorized = await post('/evaluate/flags/split', { context: {} }, {})
    expect(unauthorized.status).toBe(401)
    expect(unauthorized.body).toMatchObject({ code: 'unauthorized', errorCode: 'GENERAL' })
    const wrongKey = await post('/evaluate/flags', { context: {} }, { 'X-API-Key': 'nope' })
    expect(wrongKey.status).toBe(401)

    const missing = await post('/evaluate/flags/nope', { context: { targetingKey: 'u' } })
    expect(missing).toMatchObject({
      status: 404,
      body: { key: 'nope', errorCode: 'FLAG_NOT_FOUND', code: 'not_found' },
    })
    const noKey = await post('/evaluate/flags/split', { context: {} })
    expect(noKey).toMatchObject({ status: 400, body: { key: 'split', errorCode: 'TARGETING_KEY_MISSING' } })
    const parse = await post('/evaluate/flags/split', '{"context": ')
    expect(parse).toMatchObject({ status: 400, body: { errorCode: 'PARSE_ERROR', code: 'bad_request' } })
    const invalid = await post('/evaluate/flags', { context: { targetingKey: 42 } })
    expect(invalid).toMatchObject({ status: 400, body: { errorCode: 'INVALID_CONTEXT', code: 'bad_request' } })
    expect(invalid.body.errorDetails).toMatch(/targetingKey/)
    const badModified = await post('/evaluate/flags?flagConfigLastModified=yesterday', { context: {} })
    expect(badModified).toMatchObject({ status: 400, body: { errorCode: 'PARSE_ERROR' } })

    const get = await fetch(`${server.url}/ofrep/v1/evaluate/flags`, { headers: { Authorization: `Bearer ${KEY}` } })
    expect(get.status).toBe(405)
    expect(get.headers.get('allow')).toBe('POST')
    const del = await fetch(`${server.url}/ofrep/v1/configuration`, {
      method: 'DELETE',
      headers: { Authorization: `Bearer ${KEY}` },
    })
    expect(del.status).toBe(405)

    const config = await fetch(`${server.url}/ofrep/v1/configuration`, { headers: { 'X-API-Key': KEY } })
    expect(config.status).toBe(200)
    expect(await config.json()).toMatchObject({ name: 'flagsync flat API', capabilities: { flagEvaluation: {} } })
    const again = await fetch(`${server.url}/ofrep/v1/configuration`, {
      headers: { 'X-API-Key': KEY, 'If-None-Match': config.headers.get('etag') ?? '' },
    })
    expect(again.status).toBe(304)
  })

  it('tags the bulk answer per context and version: 304 until a change, per-flag failures listed', async () => {
    const { put, patch, post } = await start()
    await put({ key: 'a', is_enabled: true })
    await put({ key: 'split', is_enabled: true, rollout_percentage: 50 })
    const first = await post('/evaluate/flags', { context: {} })
    expect(first.status).toBe(200)
    expect(first.body.flags).toEqual([
      { key: 'a', value: true, reason: 'STATIC', variant: 'true', metadata: { revision: 1 } },
      expect.objectContaining({ key: 'split', errorCode: 'TARGETING_KEY_MISSING' }),
    ])
    const etag = first.headers.get('etag') as string
    const same = await post(
      '/evaluate/flags',
      { context: {} },
      { Authorization: `Bearer ${KEY}`, 'If-None-Match': etag },
    )
    expect(same.status).toBe(304)
    const other = await post(
      '/evaluate/flags',
      { context: { targetingKey: 'u' } },
      {
        Authorization: `Bearer ${KEY}`,
        'If-None-Match': etag,
      },
    )
    expect(other.status).toBe(200)
    await patch('a', { is_enabled: false })
    const changed = await post(
      '/evaluate/flags',
      { context: {} },
      { Authorization: `Bearer ${KEY}`, 'If-None-Match': etag },
    )
    expect(changed.status).toBe(200)
    expect(changed.body.flags[0]).toMatchObject({ key: 'a', value: false, reason: 'DISABLED' })
  })

  it('answers a bulk evaluation from the flags after a PATCH, not from the answers cached before it', async () => {
    const { put, patch, post } = await start()
    await put({ key: 'beta', is_enabled: true, rules: [{ attribute: 'plan', operator: 'equals', values: ['pro'] }] })
    await put({ key: 'on', is_enabled: true })
    const context = { context: { targetingKey: 'u-1', plan: 'pro' } }
    for (let i = 0; i < 2; i++) {
      const warm = await post('/evaluate/flags', context)
      expect(warm.body.flags).toEqual([
        { key: 'beta', value: true, reason: 'TARGETING_MATCH', variant: 'true', metadata: { revision: 1 } },
        { key: 'on', value: true, reason: 'STATIC', variant: 'true', metadata: { revision: 2 } },
      ])
    }
    await patch('beta', { rules: [{ attribute: 'plan', operator: 'equals', values: ['team'] }] })
    await patch('on', { description: 'still on' })
    const changed = await post('/evaluate/flags', context)
    expect(changed.body.flags).toEqual([
      { key: 'beta', value: true, reason: 'DEFAULT', variant: 'true', metadata: { revision: 3 } },
      { key: 'on', value: true, reason: 'STATIC', variant: 'true', metadata: { revision: 4 } },
    ])
  })

  it('sends refetchEvaluation on the refresh stream for each change and resumes with Last-Event-ID', async () => {
    const { put, patch, post } = await start()
    await put({ key: 'a', is_enabled: true })
    const bulk = await post('/evaluate/flags', { context: { targetingKey: 'u' } })
    expect(bulk.body.eventStreams[0]).toMatchObject({ type: 'sse', inactivityDelaySec: 120 })
    const stream = await openRefresh(bulk.body)
    readers.push(stream)
    expect(stream.status).toBe(200)
    await patch('a', { is_enabled: false })
    await stream.waitForCount(1)
    const [event] = refetches(stream)
    expect(event).toMatchObject({ id: '2', type: 'refetchEvaluation', etag: '2' })
    expect(typeof event?.lastModified).toBe('number')
    const refetched = await post(`/evaluate/flags?flagConfigEtag=2&flagConfigLastModified=${event?.lastModified}`, {
      context: { targetingKey: 'u' },
    })
    expect(refetched.body.flags[0]).toMatchObject({ value: false })

    const behind = await openRefresh(bulk.body, { 'Last-Event-ID': '1' })
    readers.push(behind)
    await behind.waitForCount(1)
    expect(refetches(behind)[0]).toMatchObject({ id: '2', type: 'refetchEvaluation' })
    const current = await openRefresh(bulk.body, { 'Last-Event-ID': '2' })
    readers.push(current)
    await put({ key: 'b', is_enabled: true })
    await current.waitForCount(1)
    expect(refetches(current)).toEqual([expect.objectContaining({ id: '3', type: 'refetchEvaluation' })])
  })
  it('honours a re-fetch naming a newer version: an instance behind catches up before answering', async () => {
    const { server: a, put, patch } = await start()
    await put({ key: 'a', is_enabled: true })
    // A second instance on the same database whose change-log poll never fires during the test.
    const b = await startTestServer({ dialect, sdkKey: KEY, databaseUrl: a.databaseUrl, pollIntervalMs: 600_000 })
    servers.push(b)
    const ofB = (path: string) =>
      ofrepPost(`${b.url}/ofrep/v1${path}`, { context: { targetingKey: 'u' } }, { Authorization: `Bearer ${KEY}` })
    expect((await ofB('/evaluate/flags')).body.flags[0]).toMatchObject({ value: true })
    await patch('a', { is_enabled: false })
    const revision = 2
    const refetched = await ofB(`/evaluate/flags?flagConfigEtag=${revision}`)
    expect(refetched.body.flags[0]).toMatchObject({ value: false, reason: 'DISABLED' })
    expect(refetched.body.metadata).toEqual({ revision })
  })
  it('admits the client key (CLIENT_KEY) on every OFREP route, its refresh stream included', async () => {
    const { put, post, patch } = await start('flat-client-key')
    await put({ key: 'a', is_enabled: true })
    const asClient = { 'X-API-Key': 'flat-client-key' }
    const bulk = await post('/evaluate/flags', { context: { targetingKey: 'u' } }, asClient)
    expect(bulk.status).toBe(200)
    expect(bulk.body.eventStreams[0].url).toContain('key=flat-client-key')
    expect((await post('/evaluate/flags/a', { context: {} }, asClient)).body).toMatchObject({ value: true })
    const stream = await openRefresh(bulk.body)
    readers.push(stream)
    expect(stream.status).toBe(200)
    await patch('a', { is_enabled: false })
    await stream.waitForCount(1)
    expect(refetches(stream)[0]).toMatchObject({ type: 'refetchEvaluation', id: '2' })
  })
})
