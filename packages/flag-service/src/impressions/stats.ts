import type { Knex } from 'knex'
import type { Num } from './sql-helpers.js'
import { IMPRESSION_TABLES as T } from './tables.js'
import type { ImpressionStatsJson } from './types.js'

interface StatsRow {
  flag_key: string
  total: Num
  true_count: Num
  false_count: Num
  unique_users: Num
  last_seen: Num
}

/** The lifetime stats of every flag of the environment that has impressions, by flag key (one row each). */
export async function impressionStats(knex: Knex, environmentId: string): Promise<ImpressionStatsJson[]> {
  const rows = (await knex(T.flags)
    .where('environment_id', environmentId)
    .where('total', '>', 0)
    .select('flag_key', 'total', 'true_count', 'false_count', 'unique_users', 'last_seen')
    .orderBy('flag_key')) as StatsRow[]
  return rows.map((r) => ({
    flag_key: r.flag_key,
    total: Number(r.total),
    true_count: Number(r.true_count),
    false_count: Number(r.false_count),
    unique_users: Number(r.unique_users),
    last_seen: new Date(Number(r.last_seen)).toISOString(),
  }))
}
