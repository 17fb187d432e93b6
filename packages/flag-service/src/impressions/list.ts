import type { Knex } from 'knex'
import type { ListQuery } from './schemas.js'
import type { Num } from './sql-helpers.js'
import * as postgres from './sql-postgres.js'
import * as sqlite from './sql-sqlite.js'
import { IMPRESSION_INDEXES as I, type ImpressionIndex, IMPRESSION_TABLES as T } from './tables.js'
import type { Dialect, ImpressionJson } from './types.js'

// The list of impressions: a short index range scan in id order, whatever the number of stored impressions.

interface StoredRow {
  id: Num
  flag_key: string
  user_id: string | null
  value: string
  context: string | null
  evaluated_at: Num
}

const impressionJson = (row: StoredRow): ImpressionJson => ({
  id: Number(row.id),
  flag_key: row.flag_key,
  user_id: row.user_id,
  value: row.value,
  context: row.context === null ? null : (JSON.parse(row.context) as Record<string, unknown>),
  evaluated_at: new Date(Number(row.evaluated_at)).toISOString(),
})

/**
 * The index that answers a page of this filter as a range scan in id order:
 * a user (the most selective: a user has few impressions) with the others as
 * residual conditions, else the (flag, value) series, the flag, the value, or
 * the environment.
 */
function indexFor(query: Pick<ListQuery, 'flag_key' | 'user_id' | 'value'>): ImpressionIndex {
  if (query.user_id !== undefined) return I.byUser
  if (query.flag_key !== undefined && query.value !== undefined) return I.bySeries
  if (query.flag_key !== undefined) return I.byFlag
  if (query.value !== undefined) return I.byValue
  return I.byEnv
}

interface FilterIds {
  envId: number
  flagId?: number
  valueId?: number
  seriesId?: number
  stored: number
}

/** The interned ids a filter names, with the stored rows of the narrowest one; undefined when one is unknown. */
async function resolveFilter(knex: Knex, environmentId: string, query: ListQuery): Promise<FilterIds | undefined> {
  const env = (await knex(T.envs).where('environment_id', environmentId).first('id', 'stored')) as
    | { id: Num; stored: Num }
    | undefined
  if (!env) return undefined
  let stored = Number(env.stored)
  let flagId: number | undefined
  let valueId: number | undefined
  let seriesId: number | undefined
  if (query.flag_key !== undefined) {
    const flag = (await knex(T.flags)
      .where({ environment_id: environmentId, flag_key: query.flag_key })
      .first('id', 'stored')) as { id: Num; stored: Num } | undefined
    if (!flag) return undefined
    flagId = Number(flag.id)
    stored = Number(flag.stored)
  }
  if (query.value !== undefined) {
    const value = (await knex(T.values)
      .where({ environment_id: environmentId, value: query.value })
      .first('id', 'stored')) as { id: Num; stored: Num } | undefined
    if (!value) return undefined
    valueId = Number(value.id)
    stored = Number(value.stored)
  }
  if (flagId !== undefined && valueId !== undefined) {
    const series = (await knex(T.series).where({ flag_id: flagId, value_id: valueId }).first('id', 'stored')) as
      | { id: Num; stored: Num }
      | undefined
    if (!series) return undefined
    seriesId = Number(series.id)
    stored = Number(series.stored)
  }
  return { envId: Number(env.id), flagId, valueId, seriesId, stored }
}

/**
 * One page and the total. Without since_id the page is newest first from
 * `offset`; with since_id it is the oldest rows after since_id (offset
 * ignored), so a poller that passes the last id it saw never skips a row.
 * `total` counts the rows matching flag_key, user_id and value, ignoring
 * since_id: the stored-row counter of the interned flag, value, series or
 * environment, or, when a user is named, a count of that user's index range.
 */
export async function listImpressions(
  knex: Knex,
  dialect: Dialect,
  environmentId: string,
  query: ListQuery,
): Promise<{ items: ImpressionJson[]; total: number }> {
  const ids = await resolveFilter(knex, environmentId, query)
  if (!ids) return { items: [], total: 0 } // a flag or value never reported, or no impressions at all
  const from = dialect === 'sqlite' ? sqlite.impressionsFrom(knex, indexFor(query)) : postgres.impressionsFrom(knex)
  const filter = (qb: Knex.QueryBuilder) => {
    if (query.user_id !== undefined) qb.where({ 'i.env_id': ids.envId, 'i.user_id': query.user_id })
    if (ids.seriesId !== undefined) qb.where('i.series_id', ids.seriesId)
    else if (ids.flagId !== undefined) qb.where('i.flag_id', ids.flagId)
    else if (ids.valueId !== undefined) qb.where('i.value_id', ids.valueId)
    else if (query.user_id === undefined) qb.where('i.env_id', ids.envId)
    return qb
  }
  // The page's ids first, from the index alone (rows skipped by an offset are never read), then those rows.
  const pageIds = filter(knex.from(from)).select('i.id').limit(query.limit)
  if (query.since_id !== undefined) pageIds.where('i.id', '>', query.since_id).orderBy('i.id', 'asc')
  else pageIds.orderBy('i.id', 'desc').offset(query.offset)
  const page = knex
    .from({ r: T.impressions })
    .join({ f: T.flags }, 'f.id', 'r.flag_id')
    .join({ v: T.values }, 'v.id', 'r.value_id')
    .whereIn('r.id', pageIds)
    .select('r.id', 'f.flag_key', 'r.user_id', 'v.value', 'r.context', 'r.evaluated_at')
    .orderBy('r.id', query.since_id !== undefined ? 'asc' : 'desc')

  const total =
    query.user_id === undefined
      ? Promise.resolve(ids.stored)
      : (filter(knex.from(from)).count({ n: '*' }).first() as Promise<{ n: Num } | undefined>).then((r) =>
          Number(r?.n ?? 0),
        )
  const [rows, n] = await Promise.all([page as Promise<StoredRow[]>, total])
  return { items: rows.map(impressionJson), total: n }
}
