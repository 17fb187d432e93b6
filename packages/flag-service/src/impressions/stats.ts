import type { Knex } from 'knex'
import type { StatsQuery } from './schemas.js'
import { chunks, type Num } from './sql-helpers.js'
import { IMPRESSION_LIMITS as L, IMPRESSION_TABLES as T } from './tables.js'
import type { ImpressionStatsJson, ImpressionStatsPage } from './types.js'

interface StatsRow {
  id: Num
  flag_key: string
  total: Num
  true_count: Num
  false_count: Num
  unique_users: Num
  last_seen: Num
}

interface ValueRow {
  flag_id: Num
  value: string
  total: Num
}

/**
 * The lifetime stats of the flags of the environment that have impressions,
 * by flag key (one row each): a range of the (environment_id, flag_key)
 * unique index from after `cursor`, at most `limit` entries.
 */
async function statsRows(
  knex: Knex,
  environmentId: string,
  limit: number,
  cursor: string | undefined,
): Promise<ImpressionStatsJson[]> {
  const query = knex(T.flags)
    .where('environment_id', environmentId)
    .where('total', '>', 0)
    .select('id', 'flag_key', 'total', 'true_count', 'false_count', 'unique_users', 'last_seen')
    .orderBy('flag_key')
    .limit(limit)
  if (cursor !== undefined) query.where('flag_key', '>', cursor)
  const rows = (await query) as StatsRow[]
  const values = await servedValues(
    knex,
    rows.map((r) => Number(r.id)),
  )
  return rows.map((r) => ({
    flag_key: r.flag_key,
    total: Number(r.total),
    true_count: Number(r.true_count),
    false_count: Number(r.false_count),
    unique_users: Number(r.unique_users),
    last_seen: new Date(Number(r.last_seen)).toISOString(),
    values: values.get(Number(r.id)) ?? [],
  }))
}

/** Per flag id, its most evaluated served values (at most `L.statsValues`), most evaluated first. */
async function servedValues(
  knex: Knex,
  flagIds: number[],
): Promise<Map<number, Array<{ value: string; count: number }>>> {
  const out = new Map<number, Array<{ value: string; count: number }>>()
  for (const chunk of chunks(flagIds, 500)) {
    const ranked = knex({ s: T.series })
      .join({ v: T.values }, 'v.id', 's.value_id')
      .whereIn('s.flag_id', chunk)
      .where('s.total', '>', 0)
      .select(
        's.flag_id',
        'v.value',
        's.total',
        knex.raw('row_number() over (partition by s.flag_id order by s.total desc, s.value_id) as n'),
      )
    const rows = (await knex
      .from(ranked.as('r'))
      .where('n', '<=', L.statsValues)
      .select('flag_id', 'value', 'total')
      .orderBy([{ column: 'flag_id' }, { column: 'n' }])) as ValueRow[]
    for (const row of rows) {
      const id = Number(row.flag_id)
      let list = out.get(id)
      if (!list) {
        list = []
        out.set(id, list)
      }
      list.push({ value: row.value, count: Number(row.total) })
    }
  }
  return out
}

/** The environment's stats entries by flag key: the first `L.statsUnpaged` (the paged form reads on). */
export async function impressionStats(knex: Knex, environmentId: string): Promise<ImpressionStatsJson[]> {
  return statsRows(knex, environmentId, L.statsUnpaged, undefined)
}

/** One page of stats entries after `cursor` (a flag key), and the cursor of the next page (null: the last page). */
export async function impressionStatsPage(
  knex: Knex,
  environmentId: string,
  query: StatsQuery,
): Promise<ImpressionStatsPage> {
  const items = await statsRows(knex, environmentId, query.limit + 1, query.cursor)
  const more = items.length > query.limit
  if (more) items.pop()
  return { items, next_cursor: more ? (items.at(-1)?.flag_key ?? null) : null }
}

/** When an SDK last evaluated each flag of the environment (ms), by key; a flag never evaluated is absent. */
export async function lastEvaluatedByKey(
  knex: Knex,
  environmentId: string,
  key?: string,
): Promise<Map<string, number>> {
  const query = knex(T.flags).where('environment_id', environmentId).where('total', '>', 0)
  if (key !== undefined) query.where('flag_key', key)
  const rows = (await query.select('flag_key', 'last_seen')) as Array<{ flag_key: string; last_seen: Num }>
  return new Map(rows.map((r) => [r.flag_key, Number(r.last_seen)]))
}
