import type { Knex } from 'knex'
import type { ListQuery } from './schemas.js'
import { IMPRESSION_INDEXES, IMPRESSION_TABLES, type ImpressionIndex } from './tables.js'

// The queries of issue 11, one function each, shared by the routes, the
// retention job and the benchmark. A batch is one transaction of a few
// multi-row statements; every read is a short index range scan in id order or
// a lookup of an interned row, whatever the number of stored impressions.

export type Dialect = 'sqlite' | 'postgres'

const T = IMPRESSION_TABLES
const I = IMPRESSION_INDEXES

/** A validated impression ready to store: the context already serialized, evaluated_at resolved. */
export interface ImpressionRow {
  flag_key: string
  user_id: string | null
  value: string
  context: string | null
  evaluated_at: number
}

export interface ImpressionJson {
  id: number
  flag_key: string
  user_id: string | null
  value: string
  context: Record<string, unknown> | null
  evaluated_at: string
}

export interface ImpressionStatsJson {
  flag_key: string
  total: number
  true_count: number
  false_count: number
  unique_users: number
  last_seen: string
}

type Num = number | string

/** Rows per INSERT statement: far below SQLite's 32 766 and PostgreSQL's 65 535 bound parameters. */
const ROWS_PER_STATEMENT = 2000

const placeholderCache = new Map<string, string>()
/** `(?,?,?),(?,?,?)…` for `rows` rows of `columns` values, built once per shape. */
function placeholders(rows: number, columns: number): string {
  const key = `${rows}x${columns}`
  let text = placeholderCache.get(key)
  if (text === undefined) {
    const one = `(${new Array(columns).fill('?').join(',')})`
    text = new Array(rows).fill(one).join(',')
    if (placeholderCache.size > 64) placeholderCache.clear()
    placeholderCache.set(key, text)
  }
  return text
}

/** Rows of a raw statement: SQLite's driver answers the array, pg a result object. */
function rowsOf<R>(result: unknown): R[] {
  if (Array.isArray(result)) return result as R[]
  return ((result as { rows?: R[] } | undefined)?.rows ?? []) as R[]
}

const byText = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0)
const byNumber = (a: number, b: number) => a - b

function chunks<T>(items: readonly T[], size = ROWS_PER_STATEMENT): T[][] {
  const out: T[][] = []
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size))
  return out
}

/**
 * Interned ids by name, per database handle. Ids are never reused (they only
 * disappear with their environment, whose requests then answer 404), so an
 * entry can only go stale by pointing at a row that no request will name again.
 */
class InternCache {
  private readonly map = new Map<string, number>()
  get(key: string): number | undefined {
    return this.map.get(key)
  }
  set(key: string, id: number): void {
    if (this.map.size >= 100_000) this.map.clear()
    this.map.set(key, id)
  }
  clear(): void {
    this.map.clear()
  }
}
const caches = new WeakMap<Knex, InternCache>()
function cacheOf(knex: Knex): InternCache {
  let cache = caches.get(knex)
  if (!cache) {
    cache = new InternCache()
    caches.set(knex, cache)
  }
  return cache
}

/**
 * Ids for `names` under `owner` (sorted inserts of the missing ones, then one
 * select): `table` has a unique (ownerColumn, nameColumn) and `zeros` fills
 * its other columns for a new row.
 */
async function intern(
  trx: Knex.Transaction,
  cache: InternCache,
  spec: { table: string; ownerColumn: string; nameColumn: string; zeros: Record<string, number> },
  owner: string | number,
  names: readonly string[],
): Promise<Map<string, number>> {
  const ids = new Map<string, number>()
  const missing: string[] = []
  for (const name of names) {
    const id = cache.get(`${spec.table}\u0000${owner}\u0000${name}`)
    if (id === undefined) missing.push(name)
    else ids.set(name, id)
  }
  if (missing.length === 0) return ids
  missing.sort(byText)
  const zeroColumns = Object.keys(spec.zeros)
  const columns = [spec.ownerColumn, spec.nameColumn, ...zeroColumns]
  for (const chunk of chunks(missing, 500)) {
    const bindings: Knex.RawBinding[] = []
    for (const name of chunk) bindings.push(owner, name, ...zeroColumns.map((c) => spec.zeros[c] ?? 0))
    await trx.raw(
      `insert into ${spec.table} (${columns.join(', ')}) values ${placeholders(chunk.length, columns.length)} on conflict (${spec.ownerColumn}, ${spec.nameColumn}) do nothing`,
      bindings,
    )
    const found = (await trx(spec.table)
      .where(spec.ownerColumn, owner)
      .whereIn(spec.nameColumn, chunk)
      .select('id', `${spec.nameColumn} as name`)) as Array<{ id: Num; name: Num }>
    for (const row of found) {
      const id = Number(row.id)
      const name = String(row.name)
      ids.set(name, id)
      cache.set(`${spec.table}\u0000${owner}\u0000${name}`, id)
    }
  }
  return ids
}

/** The environment's interned id (created with its first batch). */
async function internEnvironment(trx: Knex.Transaction, cache: InternCache, environmentId: string): Promise<number> {
  const key = `${T.envs}\u0000${environmentId}`
  const cached = cache.get(key)
  if (cached !== undefined) return cached
  await trx.raw(
    `insert into ${T.envs} (environment_id, stored) values (?, 0) on conflict (environment_id) do nothing`,
    [environmentId],
  )
  const row = (await trx(T.envs).where('environment_id', environmentId).first('id')) as { id: Num }
  cache.set(key, Number(row.id))
  return Number(row.id)
}

const FLAG_ZEROS = { total: 0, true_count: 0, false_count: 0, unique_users: 0, last_seen: 0, stored: 0 }

/**
 * Stores a batch and updates the counters, all in one transaction: intern
 * the environment, flags, values and (flag, value) series not seen before
 * (cached, so usually no statement at all); one multi-row INSERT of the rows;
 * the (flag, user) pairs not seen before (INSERT … ON CONFLICT DO NOTHING
 * RETURNING tells which are new); then one multi-row upsert per counter
 * table. Rows of a table are always written in sorted order, and the tables
 * in a fixed order, so concurrent batches on PostgreSQL take row locks in the
 * same order and cannot deadlock.
 */
export async function ingestImpressions(
  knex: Knex,
  dialect: Dialect,
  environmentId: string,
  rows: readonly ImpressionRow[],
  receivedAt: number,
): Promise<void> {
  if (rows.length === 0) return
  const cache = cacheOf(knex)
  const flagKeys = new Set<string>()
  const valueNames = new Set<string>()
  for (const row of rows) {
    flagKeys.add(row.flag_key)
    valueNames.add(row.value)
  }
  try {
    await knex.transaction(async (trx) => {
      const envId = await internEnvironment(trx, cache, environmentId)
      const flagIds = await intern(
        trx,
        cache,
        { table: T.flags, ownerColumn: 'environment_id', nameColumn: 'flag_key', zeros: FLAG_ZEROS },
        environmentId,
        [...flagKeys],
      )
      const valueIds = await intern(
        trx,
        cache,
        { table: T.values, ownerColumn: 'environment_id', nameColumn: 'value', zeros: { stored: 0 } },
        environmentId,
        [...valueNames],
      )

      // Per flag: the lifetime stats; per series, value and flag: the stored rows.
      const perFlag = new Map<
        number,
        { key: string; total: number; trueCount: number; falseCount: number; newUsers: number; lastSeen: number }
      >()
      const perSeriesName = new Map<string, { flagId: number; valueId: number; n: number }>()
      const perValue = new Map<number, number>()
      const pairs = new Map<string, [number, string]>()
      for (const row of rows) {
        const flagId = flagIds.get(row.flag_key) as number
        const valueId = valueIds.get(row.value) as number
        let flag = perFlag.get(flagId)
        if (!flag) {
          flag = { key: row.flag_key, total: 0, trueCount: 0, falseCount: 0, newUsers: 0, lastSeen: row.evaluated_at }
          perFlag.set(flagId, flag)
        }
        flag.total++
        if (row.value === 'true') flag.trueCount++
        else if (row.value === 'false') flag.falseCount++
        if (row.evaluated_at > flag.lastSeen) flag.lastSeen = row.evaluated_at
        const seriesName = `${flagId}:${valueId}`
        const series = perSeriesName.get(seriesName)
        if (series) series.n++
        else perSeriesName.set(seriesName, { flagId, valueId, n: 1 })
        perValue.set(valueId, (perValue.get(valueId) ?? 0) + 1)
        if (row.user_id !== null) pairs.set(`${flagId}\u0000${row.user_id}`, [flagId, row.user_id])
      }
      // A series is named by its flag and value ids, owned by the flag.
      const seriesIds = new Map<string, number>()
      const missingSeries: Array<{ name: string; flagId: number; valueId: number }> = []
      for (const [name, s] of perSeriesName) {
        const id = cache.get(`${T.series}\u0000${name}`)
        if (id === undefined) missingSeries.push({ name, flagId: s.flagId, valueId: s.valueId })
        else seriesIds.set(name, id)
      }
      if (missingSeries.length > 0) {
        missingSeries.sort((a, b) => a.flagId - b.flagId || a.valueId - b.valueId)
        for (const chunk of chunks(missingSeries, 500)) {
          const bindings: number[] = []
          for (const s of chunk) bindings.push(s.flagId, s.valueId, 0)
          await trx.raw(
            `insert into ${T.series} (flag_id, value_id, stored) values ${placeholders(chunk.length, 3)} on conflict (flag_id, value_id) do nothing`,
            bindings,
          )
          const found = (await trx(T.series)
            .whereIn(
              'flag_id',
              chunk.map((s) => s.flagId),
            )
            .whereIn(
              'value_id',
              chunk.map((s) => s.valueId),
            )
            .select('id', 'flag_id', 'value_id')) as Array<{ id: Num; flag_id: Num; value_id: Num }>
          for (const row of found) {
            const name = `${Number(row.flag_id)}:${Number(row.value_id)}`
            seriesIds.set(name, Number(row.id))
            cache.set(`${T.series}\u0000${name}`, Number(row.id))
          }
        }
      }

      for (const chunk of chunks(rows)) {
        const bindings: Knex.RawBinding[] = []
        for (const r of chunk) {
          const flagId = flagIds.get(r.flag_key) as number
          const valueId = valueIds.get(r.value) as number
          const seriesId = seriesIds.get(`${flagId}:${valueId}`) as number
          bindings.push(envId, flagId, valueId, seriesId, r.user_id, r.context, r.evaluated_at, receivedAt)
        }
        await trx.raw(
          `insert into ${T.impressions} (env_id, flag_id, value_id, series_id, user_id, context, evaluated_at, received_at) values ${placeholders(chunk.length, 8)}`,
          bindings,
        )
      }

      const sortedPairs = [...pairs.values()].sort((a, b) => a[0] - b[0] || byText(a[1], b[1]))
      for (const chunk of chunks(sortedPairs)) {
        const bindings: Knex.RawBinding[] = []
        for (const [flagId, user] of chunk) bindings.push(flagId, user)
        const inserted = rowsOf<{ flag_id: Num }>(
          await trx.raw(
            `insert into ${T.users} (flag_id, user_id) values ${placeholders(chunk.length, 2)} on conflict do nothing returning flag_id`,
            bindings,
          ),
        )
        for (const { flag_id } of inserted) {
          const flag = perFlag.get(Number(flag_id))
          if (flag) flag.newUsers++
        }
      }

      // Counters, in table order envs → values → series → flags, each by ascending id.
      await trx.raw(`update ${T.envs} set stored = stored + ? where id = ?`, [rows.length, envId])
      const values: StoredIncrement[] = []
      for (const [name, id] of valueIds) values.push([id, environmentId, name, perValue.get(id) ?? 0])
      await addStored(trx, T.values, ['environment_id', 'value'], values)
      const series: StoredIncrement[] = []
      for (const [name, s] of perSeriesName) series.push([seriesIds.get(name) as number, s.flagId, s.valueId, s.n])
      await addStored(trx, T.series, ['flag_id', 'value_id'], series)
      const flags = [...perFlag.entries()].sort((a, b) => byNumber(a[0], b[0]))
      const flagBindings: Knex.RawBinding[] = []
      for (const [id, f] of flags) {
        flagBindings.push(id, environmentId, f.key, f.total, f.trueCount, f.falseCount, f.newUsers, f.lastSeen, f.total)
      }
      const greatest = dialect === 'postgres' ? 'greatest' : 'max'
      const F = T.flags
      await trx.raw(
        `insert into ${F} (id, environment_id, flag_key, total, true_count, false_count, unique_users, last_seen, stored) ` +
          `values ${placeholders(flags.length, 9)} on conflict (id) do update set ` +
          `total = ${F}.total + excluded.total, true_count = ${F}.true_count + excluded.true_count, ` +
          `false_count = ${F}.false_count + excluded.false_count, unique_users = ${F}.unique_users + excluded.unique_users, ` +
          `last_seen = ${greatest}(${F}.last_seen, excluded.last_seen), stored = ${F}.stored + excluded.stored`,
        flagBindings,
      )
    })
  } catch (error) {
    // An interned row may have gone with its environment meanwhile: start from the database next time.
    cache.clear()
    throw error
  }
}

/** `[id, key column 1, key column 2, rows to add]` of an interned row. */
type StoredIncrement = [number, string | number, string | number, number]

/** Adds to `stored` of existing rows, by ascending id, in one statement (an upsert that always updates). */
async function addStored(
  trx: Knex.Transaction,
  table: string,
  keyColumns: [string, string],
  increments: StoredIncrement[],
): Promise<void> {
  if (increments.length === 0) return
  increments.sort((a, b) => byNumber(a[0], b[0]))
  await trx.raw(
    `insert into ${table} (id, ${keyColumns.join(', ')}, stored) values ${placeholders(increments.length, 4)} ` +
      `on conflict (id) do update set stored = ${table}.stored + excluded.stored`,
    increments.flat(),
  )
}

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
export function indexFor(query: Pick<ListQuery, 'flag_key' | 'user_id' | 'value'>): ImpressionIndex {
  if (query.user_id !== undefined) return I.byUser
  if (query.flag_key !== undefined && query.value !== undefined) return I.bySeries
  if (query.flag_key !== undefined) return I.byFlag
  if (query.value !== undefined) return I.byValue
  return I.byEnv
}

/** The interned ids a filter names, with the stored rows of the narrowest one; undefined when one is unknown. */
async function resolveFilter(
  knex: Knex,
  environmentId: string,
  query: ListQuery,
): Promise<{ envId: number; flagId?: number; valueId?: number; seriesId?: number; stored: number } | undefined> {
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
  const index = indexFor(query)
  // SQLite's planner has no statistics on a fresh database; naming the index keeps every filter on its range scan.
  const from = knex.raw(`${T.impressions} as i${dialect === 'sqlite' ? ` indexed by ${index.name}` : ''}`)
  const filter = (qb: Knex.QueryBuilder) => {
    if (query.user_id !== undefined) qb.where({ 'i.env_id': ids.envId, 'i.user_id': query.user_id })
    if (ids.seriesId !== undefined) qb.where('i.series_id', ids.seriesId)
    else if (ids.flagId !== undefined) qb.where('i.flag_id', ids.flagId)
    else if (ids.valueId !== undefined) qb.where('i.value_id', ids.valueId)
    else if (query.user_id === undefined) qb.where('i.env_id', ids.envId)
    return qb
  }
  const page = filter(knex.from(from))
    .join({ f: T.flags }, 'f.id', 'i.flag_id')
    .join({ v: T.values }, 'v.id', 'i.value_id')
    .select('i.id', 'f.flag_key', 'i.user_id', 'v.value', 'i.context', 'i.evaluated_at')
    .limit(query.limit)
  if (query.since_id !== undefined) page.where('i.id', '>', query.since_id).orderBy('i.id', 'asc')
  else page.orderBy('i.id', 'desc').offset(query.offset)

  const total =
    query.user_id === undefined
      ? Promise.resolve(ids.stored)
      : (filter(knex.from(from)).count({ n: '*' }).first() as Promise<{ n: Num } | undefined>).then((r) =>
          Number(r?.n ?? 0),
        )
  const [rows, n] = await Promise.all([page as Promise<StoredRow[]>, total])
  return { items: rows.map(impressionJson), total: n }
}

interface StatsRow {
  flag_key: string
  total: Num
  true_count: Num
  false_count: Num
  unique_users: Num
  last_seen: Num
}

/** The lifetime stats of every flag of the environment that has impressions, by flag key. */
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

export interface PruneOptions {
  /** Rows deleted per transaction (default 5000), so ingest waits at most one chunk for the write lock. */
  chunk?: number
}

/**
 * Deletes the impressions received before `cutoff` (epoch ms), oldest first,
 * in transactions of `chunk` rows, and takes them off the stored-row counters
 * (the list's totals). The lifetime stats keep counting them. Each chunk
 * looks only at the `chunk` lowest ids, so the job never scans the table: ids
 * grow with the receive time, and the first row young enough ends the run.
 * Returns the number of rows deleted.
 */
export async function pruneImpressions(knex: Knex, cutoff: number, options: PruneOptions = {}): Promise<number> {
  const chunk = Math.max(1, Math.floor(options.chunk ?? 5000))
  let deleted = 0
  for (;;) {
    const n = await knex.transaction(async (trx) => {
      const gone = rowsOf<{ env_id: Num; flag_id: Num; value_id: Num; series_id: Num }>(
        await trx.raw(
          `delete from ${T.impressions} where id in (select id from ${T.impressions} order by id limit ?) and received_at < ? returning env_id, flag_id, value_id, series_id`,
          [chunk, cutoff],
        ),
      )
      const tally = (column: 'env_id' | 'value_id' | 'series_id' | 'flag_id') => {
        const counts = new Map<number, number>()
        for (const r of gone) counts.set(Number(r[column]), (counts.get(Number(r[column])) ?? 0) + 1)
        return [...counts.entries()].sort((a, b) => byNumber(a[0], b[0]))
      }
      // Same table order as ingest: envs → values → series → flags.
      for (const [table, column] of [
        [T.envs, 'env_id'],
        [T.values, 'value_id'],
        [T.series, 'series_id'],
        [T.flags, 'flag_id'],
      ] as const) {
        for (const [id, n] of tally(column)) {
          await trx(table)
            .where('id', id)
            .update({ stored: trx.raw('stored - ?', [n]) })
        }
      }
      return gone.length
    })
    deleted += n
    if (n < chunk) return deleted
  }
}
