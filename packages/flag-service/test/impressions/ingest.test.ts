import { DIALECTS } from '@flagsync/test-support/databases'
import { describe, expect, it } from 'vitest'
import { IMPRESSION_TABLES } from '../../src/impressions/index.js'
import { anonymous, bearer, MINUTE, T0 } from '../harness.js'
import { type ImpressionFixture, impressionSuite, impressions } from './fixture.js'

const MISSING_ENV = '00000000-0000-4000-8000-000000000000'

describe.each(DIALECTS)('POST …/impressions on %s', (dialect) => {
  const { fx } = impressionSuite(dialect)

  const storedCount = async () => {
    const row = await fx().h.server.runtime.knex(IMPRESSION_TABLES.impressions).count({ n: '*' }).first()
    return Number(row?.n)
  }

  it('stores a batch from the SDK key of the environment (204), evaluated_at defaulting to the receive time', async () => {
    fx().h.clock.advance(5 * MINUTE)
    const res = await fx().post([
      {
        flag_key: 'ingest-a',
        user_id: 'u-1',
        value: 'true',
        context: { user_id: 'u-1', country: 'DE', plan: { tier: 2 } },
        evaluated_at: '2025-12-31T23:59:58.250+01:00',
      },
      { flag_key: 'ingest-a', value: 'false' },
      { flag_key: 'ingest-a', value: 'blue', user_id: null, context: null, evaluated_at: null },
    ])
    expect(res).toEqual({ status: 204, body: undefined })
    const list = await fx().list('flag_key=ingest-a')
    expect(list.status).toBe(200)
    const receivedAt = new Date(T0 + 5 * MINUTE).toISOString()
    expect(list.body.total).toBe(3)
    expect(list.body.items).toEqual([
      {
        id: expect.any(Number),
        flag_key: 'ingest-a',
        user_id: null,
        value: 'blue',
        context: null,
        evaluated_at: receivedAt,
      },
      {
        id: expect.any(Number),
        flag_key: 'ingest-a',
        user_id: null,
        value: 'false',
        context: null,
        evaluated_at: receivedAt,
      },
      {
        id: expect.any(Number),
        flag_key: 'ingest-a',
        user_id: 'u-1',
        value: 'true',
        context: { user_id: 'u-1', country: 'DE', plan: { tier: 2 } },
        evaluated_at: '2025-12-31T22:59:58.250Z',
      },
    ])
    const ids = list.body.items.map((i: { id: number }) => i.id)
    expect(ids[0]).toBeGreaterThan(ids[1])
    expect(ids[1]).toBeGreaterThan(ids[2])
  })

  it('needs no admin role: a key of any environment reports to its own, and an empty batch is a no-op', async () => {
    expect(
      (await fx().post(impressions(2, { flag_key: 'staging-only' }), fx().stagingKey, fx().stagingId)).status,
    ).toBe(204)
    const before = await storedCount()
    expect(await fx().post([])).toEqual({ status: 204, body: undefined })
    expect(await storedCount()).toBe(before)
    const staging = await fx().list('', fx().h.admin, fx().stagingId)
    expect(staging.body.total).toBe(2)
  })

  it('refuses every other caller and stores nothing', async () => {
    const before = await storedCount()
    const readWrite = await fx().h.createToken(fx().h.admin, 'read_write')
    const readOnly = await fx().h.createToken(fx().h.admin, 'read_only')
    const batch = impressions(1)
    const cases: Array<[string, Awaited<ReturnType<ImpressionFixture['post']>>, number]> = [
      ['key of another environment of the project', await fx().post(batch, fx().stagingKey), 403],
      ['key of another project', await fx().post(batch, fx().otherProjectKey), 404],
      ['key into a missing environment', await fx().post(batch, fx().key, MISSING_ENV), 404],
      ['malformed environment id', await fx().post(batch, fx().key, 'not-a-uuid'), 404],
      ['workspace admin session', await fx().post(batch, fx().h.admin), 403],
      ['project viewer session', await fx().post(batch, fx().viewer), 403],
      ['session of a non-member', await fx().post(batch, fx().outsider), 404],
      ['read_write token of an admin', await fx().post(batch, bearer(readWrite)), 403],
      ['read_only token', await fx().post(batch, bearer(readOnly)), 403],
      ['unknown SDK key', await fx().post(batch, bearer('sk_live_nope')), 401],
      ['no credentials', await fx().post(batch, anonymous), 401],
    ]
    for (const [name, res, status] of cases) expect({ name, status: res.status }).toEqual({ name, status })
    expect(cases[0]?.[1].body.error).toMatch(/bound to another environment/)
    expect(cases[4]?.[1].body.error).toMatch(/SDK key/)
    expect(await storedCount()).toBe(before)
  })

  it('accepts 500 items and answers 413 for 501, checked before the items are', async () => {
    expect((await fx().post(impressions(500, { flag_key: 'batch-limit' }))).status).toBe(204)
    const before = await storedCount()
    const over = await fx().post(impressions(501, { flag_key: 'batch-limit' }))
    expect(over.status).toBe(413)
    expect(over.body).toMatchObject({ code: 'payload_too_large', max_items: 500 })
    expect(over.body.error).toMatch(/at most 500 impressions per request \(got 501\)/)
    const invalidAndOver = await fx().post(Array.from({ length: 501 }, () => ({ nonsense: true })))
    expect(invalidAndOver.status).toBe(413)
    expect(await storedCount()).toBe(before)
    expect((await fx().list('flag_key=batch-limit')).body.total).toBe(500)
  })

  it('answers 422 naming each failing item and field, and stores none of the batch', async () => {
    const before = await storedCount()
    const res = await fx().post([
      { flag_key: 'fine', value: 'true' },
      { flag_key: 'bad key!', value: 'true' },
      { flag_key: 'fine', value: true },
      { flag_key: 'fine', value: 'x', extra: 1 },
      { flag_key: 'fine', value: 'x', evaluated_at: 'yesterday' },
      { flag_key: 'fine', value: 'x', context: [1, 2] },
      { flag_key: 'fine', value: 'x', user_id: '' },
      { value: 'x' },
      { flag_key: 'fine', value: 'x'.repeat(513) },
      { flag_key: 'fine', value: 'x', context: { blob: 'y'.repeat(5000) } },
      { flag_key: 'fine', value: 'x', evaluated_at: '2026-01-01T00:00:00' },
      'not an object',
      { flag_key: 'fine', value: 'x', user_id: 'tab\there' },
      { flag_key: 'fine', value: 'half \ud800 a pair' },
    ])
    expect(res.status).toBe(422)
    expect(res.body.code).toBe('validation_failed')
    expect(res.body.error).toMatch(/^invalid impressions: \[1\]\.flag_key: /)
    expect(res.body.issues.map((i: { path: string }) => i.path)).toEqual([
      '[1].flag_key',
      '[2].value',
      '[3].extra',
      '[4].evaluated_at',
      '[5].context',
      '[6].user_id',
      '[7].flag_key',
      '[8].value',
      '[9].context',
      '[10].evaluated_at',
      '[11]',
      '[12].user_id',
      '[13].value',
    ])
    expect(res.body.issues[11].message).toBe('must not contain control characters or unpaired surrogates')
    expect(res.body.issues[3].message).toMatch(/ISO 8601/)
    expect(res.body.issues[8].message).toMatch(/at most 4096 characters as JSON/)
    const notArray = await fx().post({ flag_key: 'fine', value: 'true' })
    expect(notArray.status).toBe(422)
    expect(notArray.body.issues).toEqual([{ path: '(root)', message: 'must be an array of impressions' }])
    expect(await storedCount()).toBe(before)
  })

  it('refuses a NUL in a value with a 422 on both dialects (PostgreSQL text cannot hold it); other control characters are kept', async () => {
    const before = await storedCount()
    const res = await fx().post([
      { flag_key: 'nul', value: 'fine' },
      { flag_key: 'nul', value: 'v\u0000' },
    ])
    expect(res.status).toBe(422)
    expect(res.body.issues).toEqual([{ path: '[1].value', message: 'must not contain NUL (U+0000)' }])
    expect(await storedCount()).toBe(before)
    expect((await fx().post([{ flag_key: 'nul', value: 'line\nbreak\ttab' }])).status).toBe(204)
    expect((await fx().list('flag_key=nul')).body.items.map((i: { value: string }) => i.value)).toEqual([
      'line\nbreak\ttab',
    ])
  })

  it('answers 405 with Allow for other methods', async () => {
    const res = await fx().h.call(`/api/environments/${fx().envId}/impressions`, {
      method: 'PUT',
      as: fx().key,
      body: [],
    })
    expect(res.status).toBe(405)
    expect(res.res.headers.get('allow')).toBe('GET, POST')
    const stats = await fx().h.call(`/api/environments/${fx().envId}/impressions/stats`, {
      method: 'POST',
      as: fx().key,
    })
    expect(stats.status).toBe(405)
    expect(stats.res.headers.get('allow')).toBe('GET')
  })
})
