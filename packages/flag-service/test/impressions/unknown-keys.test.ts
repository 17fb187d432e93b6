import { DIALECTS } from '@flagsync/test-support/databases'
import { beforeAll, describe, expect, it } from 'vitest'
import { KNOWN_KEY_TTL_MS, pruneExpiredImpressions, IMPRESSION_TABLES as T } from '../../src/impressions/index.js'
import { DAY } from '../harness.js'
import { impressionSuite, impressions } from './fixture.js'

describe.each(DIALECTS)('impressions of flag keys the environment has on %s', (dialect) => {
  const { fx, knex, advance } = impressionSuite(dialect)
  const flagPath = (key: string) => `/api/environments/${fx().envId}/flags/${key}`
  const statsKeys = async () => ((await fx().stats()).body as Array<{ flag_key: string }>).map((s) => s.flag_key)

  it('stores the impressions of its flags and counts, names and leaves out those of keys it never had', async () => {
    await fx().createFlag('known-a')
    const batch = [
      ...impressions(3, { flag_key: 'known-a' }),
      ...impressions(2, { flag_key: 'invented-1' }),
      { flag_key: 'invented-2', value: 'x' },
      { flag_key: 'invented-1', value: 'y' },
    ]
    const res = await fx().postAsIs(batch)
    expect(res).toEqual({
      status: 200,
      body: { stored: 3, ignored_unknown_keys: 4, unknown_flag_keys: ['invented-1', 'invented-2'] },
    })
    expect(await statsKeys()).toEqual(['known-a'])
    expect((await fx().list()).body.total).toBe(3)
    expect(await knex()(T.flags).where('environment_id', fx().envId).pluck('flag_key')).toEqual(['known-a'])
    // Only unknown keys: nothing stored, still a 2xx (an SDK must not retry it or drop good impressions with it).
    const none = await fx().postAsIs(impressions(2, { flag_key: 'invented-3' }))
    expect(none).toEqual({
      status: 200,
      body: { stored: 0, ignored_unknown_keys: 2, unknown_flag_keys: ['invented-3'] },
    })
    // A batch of known keys only is the spec's 204.
    expect(await fx().postAsIs(impressions(1, { flag_key: 'known-a' }))).toEqual({ status: 204, body: undefined })
    expect(await statsKeys()).toEqual(['known-a'])
  })

  it('names at most 20 unknown keys, and knows a flag created a moment after its key was refused', async () => {
    const batch = Array.from({ length: 30 }, (_, i) => ({
      flag_key: `made-up-${String(i).padStart(2, '0')}`,
      value: 'v',
    }))
    const res = await fx().postAsIs(batch)
    expect(res.status).toBe(200)
    expect(res.body.ignored_unknown_keys).toBe(30)
    expect(res.body.unknown_flag_keys).toEqual(batch.slice(0, 20).map((i) => i.flag_key))
    await fx().createFlag('made-up-00')
    expect((await fx().postAsIs([{ flag_key: 'made-up-00', value: 'v' }])).status).toBe(204)
    expect(await statsKeys()).toContain('made-up-00')
  })

  it('keeps taking a deleted flag while its delete is in the change log, then ignores it', async () => {
    await fx().createFlag('short-lived')
    expect((await fx().postAsIs(impressions(2, { flag_key: 'short-lived' }))).status).toBe(204)
    expect((await fx().h.call(flagPath('short-lived'), { method: 'DELETE', as: fx().h.admin })).status).toBe(204)
    // An SDK that evaluated it before the delete reached it reports it afterwards: still stored.
    expect((await fx().postAsIs(impressions(1, { flag_key: 'short-lived' }))).status).toBe(204)
    await advance(10 * DAY)
    expect(await fx().h.server.runtime.store.pruneHistory(7 * DAY, 0)).toBeGreaterThan(0)
    await advance(KNOWN_KEY_TTL_MS + 1)
    const late = await fx().postAsIs(impressions(1, { flag_key: 'short-lived' }))
    expect(late.body).toMatchObject({ stored: 0, ignored_unknown_keys: 1, unknown_flag_keys: ['short-lived'] })
    expect((await fx().list('flag_key=short-lived')).body.total).toBe(3)
  })

  it('forgets the stats of a flag it no longer has one retention period after its last impression', async () => {
    await fx().createFlag('doomed')
    await fx().createFlag('kept')
    expect((await fx().postAsIs(impressions(4, { flag_key: 'doomed', value: 'doomed-only' }))).status).toBe(204)
    expect((await fx().postAsIs(impressions(2, { flag_key: 'kept' }))).status).toBe(204)
    const doomedId = (await knex()(T.flags).where({ environment_id: fx().envId, flag_key: 'doomed' }).first('id')).id
    expect((await fx().h.call(flagPath('doomed'), { method: 'DELETE', as: fx().h.admin })).status).toBe(204)
    await advance(10 * DAY)
    await fx().h.server.runtime.store.pruneHistory(7 * DAY, 0)
    // Its impressions are within the retention period: its stats stay.
    await pruneExpiredImpressions(fx().h.server.runtime, { maxAgeMs: 30 * DAY })
    expect(await statsKeys()).toContain('doomed')

    await advance(25 * DAY)
    await pruneExpiredImpressions(fx().h.server.runtime, { maxAgeMs: 30 * DAY, chunk: 1 })
    const keys = await statsKeys()
    expect(keys).not.toContain('doomed')
    // A flag the environment has keeps its lifetime stats after its impressions expire.
    expect(keys).toContain('kept')
    expect(await knex()(T.flags).where('id', doomedId).first()).toBeUndefined()
    expect(await knex()(T.series).where('flag_id', doomedId).first()).toBeUndefined()
    expect(await knex()(T.users).where('flag_id', doomedId).first()).toBeUndefined()
    expect(await knex()(T.values).where({ environment_id: fx().envId, value: 'doomed-only' }).first()).toBeUndefined()

    // The key made again is a new flag: its impressions count from zero, in a row of their own.
    expect(
      (
        await fx().h.call(`/api/environments/${fx().envId}/flags`, {
          method: 'POST',
          as: fx().h.admin,
          body: { key: 'doomed', is_enabled: true },
        })
      ).status,
    ).toBe(200)
    expect((await fx().postAsIs(impressions(1, { flag_key: 'doomed', value: 'doomed-only' }))).status).toBe(204)
    const stats = (await fx().stats()).body as Array<{ flag_key: string; total: number; values: unknown }>
    expect(stats.find((s) => s.flag_key === 'doomed')).toMatchObject({
      total: 1,
      values: [{ value: 'doomed-only', count: 1 }],
    })
    expect((await fx().list('flag_key=doomed')).body.total).toBe(1)
  })
})

describe.each(DIALECTS)('GET …/impressions/stats pages on %s', (dialect) => {
  const { fx } = impressionSuite(dialect)
  const keys = ['p-a', 'p-b', 'p-c', 'p-d', 'p-e']
  beforeAll(async () => {
    for (const key of keys) expect((await fx().post(impressions(2, { flag_key: key }))).status).toBe(204)
  })
  const stats = (query: string) =>
    fx().h.call(`/api/environments/${fx().envId}/impressions/stats${query}`, { as: fx().h.admin })

  it('answers the array of every entry without paging parameters', async () => {
    const res = await stats('')
    expect(res.status).toBe(200)
    expect(Array.isArray(res.body)).toBe(true)
    expect(res.body.map((s: { flag_key: string }) => s.flag_key)).toEqual(keys)
    expect(res.res.headers.get('link')).toBeNull()
  })

  it('answers {items, next_cursor} pages in flag key order with limit and cursor', async () => {
    const seen: string[] = []
    let cursor: string | null = null
    let pages = 0
    do {
      const res = await stats(`?limit=2${cursor ? `&cursor=${cursor}` : ''}`)
      expect(res.status).toBe(200)
      expect(Object.keys(res.body).sort()).toEqual(['items', 'next_cursor'])
      expect(res.body.items.length).toBeLessThanOrEqual(2)
      seen.push(...res.body.items.map((s: { flag_key: string }) => s.flag_key))
      cursor = res.body.next_cursor
      pages++
    } while (cursor !== null)
    expect(seen).toEqual(keys)
    expect(pages).toBe(3)
    // A cursor alone pages with the default size; the entries are those of the array.
    const rest = await stats('?cursor=p-c')
    expect(rest.body).toEqual({ items: (await stats('')).body.slice(3), next_cursor: null })
    expect((await stats('?limit=5')).body.next_cursor).toBeNull()
  })

  it('answers 422 naming a bad paging parameter or an unknown one', async () => {
    for (const [query, field] of [
      ['?limit=0', 'limit'],
      ['?limit=1001', 'limit'],
      ['?limit=two', 'limit'],
      ['?cursor=no%20spaces', 'cursor'],
      ['?page=2', 'page'],
    ] as const) {
      const res = await stats(query)
      expect({ query, status: res.status }).toEqual({ query, status: 422 })
      expect(JSON.stringify(res.body.issues)).toContain(field)
    }
  })
})
