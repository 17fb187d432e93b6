import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { IMPRESSION_INDEXES, type ListQuery, listImpressions } from '../../src/impressions/index.js'
import { type ImpressionFixture, impressions, startImpressionFixture } from './fixture.js'

/**
 * Every filter of the list reads its own index in id order and stops after
 * `limit` rows: no temporary B-tree (a sort of every matching row) and no
 * scan of the table. PostgreSQL's plans at 5 million rows are in the bench.
 */
describe('list query plans on sqlite', () => {
  let f: ImpressionFixture
  beforeAll(async () => {
    f = await startImpressionFixture('sqlite')
    const batch = [
      ...impressions(20, { flag_key: 'a', value: 'true' }),
      ...impressions(20, { flag_key: 'b', value: 'false', user_id: 'u1' }),
    ]
    expect((await f.post(batch)).status).toBe(204)
  })
  afterAll(async () => {
    await f?.dispose()
  })

  const cases: Array<[Partial<ListQuery>, string]> = [
    [{}, IMPRESSION_INDEXES.byEnv.name],
    [{ flag_key: 'a' }, IMPRESSION_INDEXES.byFlag.name],
    [{ value: 'true' }, IMPRESSION_INDEXES.byValue.name],
    [{ flag_key: 'a', value: 'true' }, IMPRESSION_INDEXES.bySeries.name],
    [{ user_id: 'u1' }, IMPRESSION_INDEXES.byUser.name],
    [{ user_id: 'u1', flag_key: 'b', value: 'false' }, IMPRESSION_INDEXES.byUser.name],
    [{ flag_key: 'a', since_id: 3 }, IMPRESSION_INDEXES.byFlag.name],
    [{ offset: 10 }, IMPRESSION_INDEXES.byEnv.name],
  ]
  it.each(cases)('%j reads %s in id order', async (filter, index) => {
    const knex = f.h.server.runtime.knex
    const seen: Array<{ sql: string; bindings: unknown[] }> = []
    const listener = (q: { sql: string; bindings: unknown[] }) => {
      if (q.sql.includes('flagsync_impressions as i')) seen.push(q)
    }
    knex.on('query', listener)
    try {
      await listImpressions(knex, 'sqlite', f.envId, { limit: 50, offset: 0, ...filter })
    } finally {
      knex.off('query', listener)
    }
    expect(seen.length).toBe(filter.user_id === undefined ? 1 : 2) // the page, and a count for a user
    for (const q of seen) {
      const plan = ((await knex.raw(`explain query plan ${q.sql}`, q.bindings as never)) as Array<{ detail: string }>)
        .map((p) => p.detail)
        .join(' | ')
      expect(plan).toMatch(new RegExp(`SEARCH i USING (COVERING )?INDEX ${index} \\(`))
      expect(plan).not.toMatch(/TEMP B-TREE|SCAN i/)
    }
  })
})
