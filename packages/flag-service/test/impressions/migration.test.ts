import { createTestDatabase, type TestDatabase } from '@flagsync/test-support/databases'
import { afterAll, describe, expect, it } from 'vitest'
import { IMPRESSION_TABLES as T } from '../../src/impressions/index.js'
import { impressionStats, ingestImpressions } from '../../src/impressions/store.js'
import { openServiceRuntime } from '../../src/index.js'
import { SERVICE_MIGRATIONS_TABLE } from '../../src/tables.js'
import { T0 } from '../harness.js'

// Migrations 0201 (SQLite's counter view) and 0202 (series totals) on a database made before them: counters
// stored under 0200 stay, series totals start from the rows kept, and ingest counts on from them.
describe('migrations 0201_impression_counter_view and 0202_impression_series_totals on an existing SQLite database', () => {
  let db: TestDatabase | undefined
  afterAll(async () => {
    await db?.drop()
  })

  it('creates the view and its triggers, and ingest adds to the counters already stored', async () => {
    db = await createTestDatabase('sqlite')
    const environmentId = crypto.randomUUID()
    const rows = (n: number, value: string) =>
      Array.from({ length: n }, (_, i) => ({
        flag_key: 'f',
        user_id: `u${i}`,
        value,
        context: null,
        evaluated_at: T0 + i,
      }))

    // A database as 0200 left it, with impressions stored.
    let runtime = await openServiceRuntime({ databaseUrl: db.url, clock: () => T0 })
    try {
      const { knex } = runtime
      await knex('flagsync_projects').insert({ id: environmentId, name: 'p', slug: 'p', created_at: 0 })
      await knex('flagsync_environments').insert({
        id: environmentId,
        project_id: environmentId,
        name: 'e',
        slug: 'e',
        color: '#000000',
        is_default: true,
        require_approval: false,
        position: 0,
        created_at: 0,
      })
      await ingestImpressions(knex, 'sqlite', environmentId, rows(3, 'true'), T0)
      for (const name of ['envs', 'values', 'series', 'flags']) {
        await knex.schema.raw(`drop trigger flagsync_impression_counts_${name}`)
      }
      await knex.schema.raw('drop view flagsync_impression_counts')
      await knex.schema.alterTable(T.series, (t) => t.dropColumn('total'))
      await knex(SERVICE_MIGRATIONS_TABLE)
        .whereIn('name', ['0201_impression_counter_view', '0202_impression_series_totals'])
        .delete()
    } finally {
      await runtime.close()
    }

    runtime = await openServiceRuntime({ databaseUrl: db.url, clock: () => T0 })
    try {
      const { knex } = runtime
      expect(
        await knex(SERVICE_MIGRATIONS_TABLE)
          .whereIn('name', ['0201_impression_counter_view', '0202_impression_series_totals'])
          .pluck('name'),
      ).toHaveLength(2)
      await ingestImpressions(knex, 'sqlite', environmentId, rows(5, 'false'), T0)
      expect(await impressionStats(knex, environmentId)).toEqual([
        {
          flag_key: 'f',
          total: 8,
          true_count: 3,
          false_count: 5,
          unique_users: 5,
          last_seen: new Date(T0 + 4).toISOString(),
          values: [
            { value: 'false', count: 5 },
            { value: 'true', count: 3 },
          ],
        },
      ])
      expect(Number((await knex(T.envs).first('stored'))?.stored)).toBe(8)
      expect(
        (await knex(T.values).orderBy('value').select('value', 'stored')).map((r) => [r.value, Number(r.stored)]),
      ).toEqual([
        ['false', 5],
        ['true', 3],
      ])
      expect((await knex(T.series).select('stored')).map((r) => Number(r.stored)).sort()).toEqual([3, 5])
    } finally {
      await runtime.close()
    }
  })
})
