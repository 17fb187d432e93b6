import type { Knex } from 'knex'
import type { ListQuery } from './schemas.js'
import { IMPRESSION_INDEXES, IMPRESSION_TABLES } from './tables.js'

// The queries of issue 11, one function each, shared by the routes, the
// retention job and the benchmark. Writes are multi-row statements in one
// transaction per batch; every read is a short index range scan or a lookup in
// a small rollup table, whatever the number of stored impressions.

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

/**
 * Stores a batch and updates the rollups, all in one transaction: the rows
 * (one multi-row INSERT), the (flag, user) pairs not seen before (INSERT … ON
 * CONFLICT DO NOTHING RETURNING tells which are new), the stored-row counters
 * per (flag, value) and the lifetime stats per flag (upserts that add). Rollup
 * keys are written in sorted order, so concurrent batches on PostgreSQL lock
 * the same rows in the same order and cannot deadlock.
 */
export async function ingestImpressions(
  knex: Knex,
  dialect: Dialect,
  environmentId: string,
  rows: readonly ImpressionRow[],
  receivedAt: number,
): Promise<void> {
  if (rows.length === 0) return
  const perFlag = new Map<
    string,
    { total: number; trueCount: number; falseCount: number; newUsers: number; lastSeen: number }
  >()
  const perValue = new Map<string, { flag: string; value: string; n: number }>()
  const pairs = new Map<string, [string, string]>()
  for (const row of rows) {
    let flag = perFlag.get(row.flag_key)
    if (!flag) {
      flag = { total: 0, trueCount: 0, falseCount: 0, newUsers: 0, lastSeen: row.evaluated_at }
      perFlag.set(row.flag_key, flag)
    }
    flag.total++
    if (row.value === 'true') flag.trueCount++
    else if (row.value === 'false') flag.falseCount++
    if (row.evaluated_at > flag.lastSeen) flag.lastSeen = row.evaluated_at
    // JSON of the pair: no separator can collide with the characters of a value or a user id.
    const valueKey = JSON.stringify([row.flag_key, row.value])
    const counted = perValue.get(valueKey)
    if (counted) counted.n++
    else perValue.set(valueKey, { flag: row.flag_key, value: row.value, n: 1 })
    if (row.user_id !== null) pairs.set(JSON.stringify([row.flag_key, row.user_id]), [row.flag_key, row.user_id])
  }

  await knex.transaction(async (trx) => {
    for (let start = 0; start < rows.length; start += ROWS_PER_STATEMENT) {
      const chunk = rows.slice(start, start + ROWS_PER_STATEMENT)
      const bindings: unknown[] = []
      for (const r of chunk) {
        bindings.push(environmentId, r.flag_key, r.user_id, r.value, r.context, r.evaluated_at, receivedAt)
      }
      await trx.raw(
        `insert into ${T.impressions} (environment_id, flag_key, user_id, value, context, evaluated_at, received_at) values ${placeholders(chunk.length, 7)}`,
        bindings as Knex.RawBinding[],
      )
    }

    const sortedPairs = [...pairs.values()].sort((a, b) => byText(a[0], b[0]) || byText(a[1], b[1]))
    for (let start = 0; start < sortedPairs.length; start += ROWS_PER_STATEMENT) {
      const chunk = sortedPairs.slice(start, start + ROWS_PER_STATEMENT)
      const bindings: string[] = []
      for (const [flag, user] of chunk) bindings.push(environmentId, flag, user)
      const inserted = rowsOf<{ flag_key: string }>(
        await trx.raw(
          `insert into ${T.users} (environment_id, flag_key, user_id) values ${placeholders(chunk.length, 3)} on conflict do nothing returning flag_key`,
          bindings,
        ),
      )
      for (const { flag_key } of inserted) {
        const flag = perFlag.get(flag_key)
        if (flag) flag.newUsers++
      }
    }

    const values = [...perValue.values()].sort((a, b) => byText(a.flag, b.flag) || byText(a.value, b.value))
    const valueBindings: Knex.RawBinding[] = []
    for (const v of values) valueBindings.push(environmentId, v.flag, v.value, v.n)
    await trx.raw(
      `insert into ${T.counts} (environment_id, flag_key, value, stored) values ${placeholders(values.length, 4)} ` +
        `on conflict (environment_id, flag_key, value) do update set stored = ${T.counts}.stored + excluded.stored`,
      valueBindings,
    )

    const flags = [...perFlag.entries()].sort((a, b) => byText(a[0], b[0]))
    const statBindings: Knex.RawBinding[] = []
    for (const [key, f] of flags) {
      statBindings.push(environmentId, key, f.total, f.trueCount, f.falseCount, f.newUsers, f.lastSeen)
    }
    const greatest = dialect === 'postgres' ? 'greatest' : 'max'
    await trx.raw(
      `insert into ${T.stats} (environment_id, flag_key, total, true_count, false_count, unique_users, last_seen) ` +
        `values ${placeholders(flags.length, 7)} on conflict (environment_id, flag_key) do update set ` +
        `total = ${T.stats}.total + excluded.total, ` +
        `true_count = ${T.stats}.true_count + excluded.true_count, ` +
        `false_count = ${T.stats}.false_count + excluded.false_count, ` +
        `unique_users = ${T.stats}.unique_users + excluded.unique_users, ` +
        `last_seen = ${greatest}(${T.stats}.last_seen, excluded.last_seen)`,
      statBindings,
    )
  })
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
 * The index that answers a page of this filter as a range scan in id order.
 * A user id is the most selective filter (a user has few impressions), then
 * flag and value together, then either alone.
 */
export function indexFor(query: Pick<ListQuery, 'flag_key' | 'user_id' | 'value'>): string {
  if (query.user_id !== undefined) return I.byUser
  if (query.flag_key !== undefined && query.value !== undefined) return I.byFlagValue
  if (query.flag_key !== undefined) return I.byFlag
  if (query.value !== undefined) return I.byValue
  return I.byEnv
}

/**
 * One page and the total. Without since_id the page is newest first from
 * `offset`; with since_id it is the oldest rows after since_id (offset
 * ignored), so a poller that passes the last id it saw never skips a row.
 * `total` counts the rows matching flag_key, user_id and value, ignoring
 * since_id: from the per-(flag, value) counters unless a user is named, else
 * by counting that user's index range.
 */
export async function listImpressions(
  knex: Knex,
  dialect: Dialect,
  environmentId: string,
  query: ListQuery,
): Promise<{ items: ImpressionJson[]; total: number }> {
  // SQLite's planner has no statistics on a fresh database; naming the index keeps every filter on its range scan.
  const from =
    dialect === 'sqlite'
      ? knex.raw(`${T.impressions} indexed by ${indexFor(query)}`)
      : (T.impressions as unknown as Knex.Raw)
  const page = knex
    .from(from)
    .where('environment_id', environmentId)
    .select('id', 'flag_key', 'user_id', 'value', 'context', 'evaluated_at')
    .limit(query.limit)
  if (query.flag_key !== undefined) page.where('flag_key', query.flag_key)
  if (query.user_id !== undefined) page.where('user_id', query.user_id)
  if (query.value !== undefined) page.where('value', query.value)
  if (query.since_id !== undefined) page.where('id', '>', query.since_id).orderBy('id', 'asc')
  else page.orderBy('id', 'desc').offset(query.offset)

  let total: Promise<{ n: Num | null } | undefined>
  if (query.user_id !== undefined) {
    const count = knex.from(from).where({ environment_id: environmentId, user_id: query.user_id }).count({ n: '*' })
    if (query.flag_key !== undefined) count.where('flag_key', query.flag_key)
    if (query.value !== undefined) count.where('value', query.value)
    total = count.first() as Promise<{ n: Num | null } | undefined>
  } else {
    const sum = knex(T.counts).where('environment_id', environmentId).sum({ n: 'stored' })
    if (query.flag_key !== undefined) sum.where('flag_key', query.flag_key)
    if (query.value !== undefined) sum.where('value', query.value)
    total = sum.first() as Promise<{ n: Num | null } | undefined>
  }
  const [rows, counted] = await Promise.all([page as Promise<StoredRow[]>, total])
  return { items: rows.map(impressionJson), total: Number(counted?.n ?? 0) }
}

interface StatsRow {
  flag_key: string
  total: Num
  true_count: Num
  false_count: Num
  unique_users: Num
  last_seen: Num
}

/** The lifetime rollup of every flag of the environment that has impressions, by flag key. */
export async function impressionStats(knex: Knex, environmentId: string): Promise<ImpressionStatsJson[]> {
  const rows = (await knex(T.stats)
    .where('environment_id', environmentId)
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
 * (the list's `total`). The lifetime stats keep counting them. Each chunk looks
 * only at the `chunk` lowest ids, so the job never scans the table: ids grow
 * with the receive time, and the first row young enough ends the run. Returns
 * the number of rows deleted.
 */
export async function pruneImpressions(knex: Knex, cutoff: number, options: PruneOptions = {}): Promise<number> {
  const chunk = Math.max(1, Math.floor(options.chunk ?? 5000))
  let deleted = 0
  for (;;) {
    const n = await knex.transaction(async (trx) => {
      const gone = rowsOf<{ environment_id: string; flag_key: string; value: string }>(
        await trx.raw(
          `delete from ${T.impressions} where id in (select id from ${T.impressions} order by id limit ?) and received_at < ? returning environment_id, flag_key, value`,
          [chunk, cutoff],
        ),
      )
      const groups = new Map<string, { env: string; flag: string; value: string; n: number }>()
      for (const r of gone) {
        const key = JSON.stringify([r.environment_id, r.flag_key, r.value])
        const g = groups.get(key)
        if (g) g.n++
        else groups.set(key, { env: r.environment_id, flag: r.flag_key, value: r.value, n: 1 })
      }
      const sorted = [...groups.values()].sort(
        (a, b) => byText(a.env, b.env) || byText(a.flag, b.flag) || byText(a.value, b.value),
      )
      for (const g of sorted) {
        const where = { environment_id: g.env, flag_key: g.flag, value: g.value }
        await trx(T.counts)
          .where(where)
          .update({ stored: trx.raw('stored - ?', [g.n]) })
        await trx(T.counts).where(where).where('stored', '<=', 0).delete()
      }
      return gone.length
    })
    deleted += n
    if (n < chunk) return deleted
  }
}
