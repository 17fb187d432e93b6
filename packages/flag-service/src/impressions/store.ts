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

/** Rows per INSERT statement of impressions or pairs (each is one statement of a few bound values). */
const ROWS_PER_STATEMENT = 5000

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
 * A transaction stages the ids it creates and publishes them after its commit:
 * an id another transaction has not committed yet is never handed out (it could
 * roll back, and waiting on its row lock could deadlock).
 */
class InternCache {
  private readonly map = new Map<string, number>()
  get(key: string): number | undefined {
    return this.map.get(key)
  }
  publish(entries: Map<string, number>): void {
    if (this.map.size + entries.size > 100_000) this.map.clear()
    for (const [key, id] of entries) this.map.set(key, id)
  }
  clear(): void {
    this.map.clear()
  }
}

/** The cache as one transaction sees it: its own new ids first, published only after the commit. */
class TxCache {
  readonly staged = new Map<string, number>()
  constructor(private readonly shared: InternCache) {}
  get(key: string): number | undefined {
    return this.staged.get(key) ?? this.shared.get(key)
  }
  set(key: string, id: number): void {
    this.staged.set(key, id)
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
  cache: TxCache,
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
async function internEnvironment(trx: Knex.Transaction, cache: TxCache, environmentId: string): Promise<number> {
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

/** Handles whose SQLite connection got `tuneSqlite` (knex keeps the one connection for the handle's life). */
const tuned = new WeakSet<Knex>()
/** SQLite handles whose library has `jsonb_each` (3.45 and later). */
const withJsonb = new WeakSet<Knex>()

/**
 * Connection settings for ingest on SQLite (they act on the connection, harmlessly for everything else):
 * - a 64 MB page cache instead of 2 MB: a group dirties thousands of index pages (the user index and the pairs
 *   take random keys), which would otherwise spill to the WAL mid-transaction and be read back;
 * - checkpoints every 10 000 WAL pages instead of 1000: a page that many groups rewrite (those random keys
 *   again) is copied to the database file once per checkpoint, not once per group;
 * - the statement journal in memory rather than a temporary file.
 * It also notes whether the library has `jsonb_each` (see `insertRows`).
 */
async function tuneSqlite(trx: Knex.Transaction, knex: Knex): Promise<void> {
  await trx.raw('pragma cache_size = -65536')
  await trx.raw('pragma wal_autocheckpoint = 10000')
  await trx.raw('pragma temp_store = memory')
  const [row] = (await trx.raw('select sqlite_version() as version')) as Array<{ version: string }>
  const [major = 0, minor = 0] = (row?.version ?? '').split('.').map(Number)
  if (major > 3 || (major === 3 && minor >= 45)) withJsonb.add(knex)
  else withJsonb.delete(knex)
  tuned.add(knex)
}

const FLAG_ZEROS = { total: 0, true_count: 0, false_count: 0, unique_users: 0, last_seen: 0, stored: 0 }

/** One request's impressions for one environment. */
export interface IngestBatch {
  environmentId: string
  rows: readonly ImpressionRow[]
  receivedAt: number
}

/** Stores one batch (see `ingestBatches`). */
export function ingestImpressions(
  knex: Knex,
  dialect: Dialect,
  environmentId: string,
  rows: readonly ImpressionRow[],
  receivedAt: number,
): Promise<void> {
  return ingestBatches(knex, dialect, [{ environmentId, rows, receivedAt }])
}

/** Interned ids by cache key (a shared cache: published ids only; a transaction's: its own new ids too). */
interface IdLookup {
  get(key: string): number | undefined
}

const envKey = (environmentId: string) => `${T.envs}\u0000${environmentId}`
const flagKey = (environmentId: string, key: string) => `${T.flags}\u0000${environmentId}\u0000${key}`
const valueKey = (environmentId: string, value: string) => `${T.values}\u0000${environmentId}\u0000${value}`
const seriesKey = (name: string) => `${T.series}\u0000${name}`

/** What a transaction writes: the statements' bindings, ready before it begins. */
interface Plan {
  /** One entry per INSERT of rows (ROWS_PER_STATEMENT each): its bindings. */
  rows: Knex.RawBinding[][]
  /** One entry per INSERT of (flag, user) pairs (sorted, ROWS_PER_STATEMENT each): its bindings. */
  pairs: Knex.RawBinding[][]
  rowCount: number
  pairCount: number
  envs: StoredIncrement[]
  values: StoredIncrement[]
  series: StoredIncrement[]
  flags: Map<number, FlagTally>
}

/**
 * Everything a transaction writes, from interned ids alone; undefined when
 * a name has no id in `ids` yet (the transaction interns it first).
 */
function planOf(dialect: Dialect, live: readonly IngestBatch[], ids: IdLookup): Plan | undefined {
  // Per flag the lifetime stats and users; per environment, value, series and flag the stored rows.
  const perFlag = new Map<number, FlagTally>()
  const perEnv = new Map<number, { environmentId: string; n: number }>()
  const perValue = new Map<number, { environmentId: string; value: string; n: number }>()
  const perSeries = new Map<number, { flagId: number; valueId: number; n: number }>()
  const users = new Map<number, Set<string>>()
  const tuples: ImpressionTuple[] = []
  for (const batch of live) {
    const environmentId = batch.environmentId
    const envId = ids.get(envKey(environmentId))
    if (envId === undefined) return undefined
    const env = perEnv.get(envId) ?? { environmentId, n: 0 }
    env.n += batch.rows.length
    perEnv.set(envId, env)
    // A batch repeats few (flag, value) pairs: resolve each once, by flag key then value.
    const series = new Map<string, Map<string, SeriesOfBatch>>()
    for (const row of batch.rows) {
      let ofFlag = series.get(row.flag_key)
      if (!ofFlag) {
        ofFlag = new Map()
        series.set(row.flag_key, ofFlag)
      }
      let s = ofFlag.get(row.value)
      if (!s) {
        const flagId = ids.get(flagKey(environmentId, row.flag_key))
        const valueId = ids.get(valueKey(environmentId, row.value))
        if (flagId === undefined || valueId === undefined) return undefined
        const seriesId = ids.get(seriesKey(`${flagId}:${valueId}`))
        if (seriesId === undefined) return undefined
        let flag = perFlag.get(flagId)
        if (!flag) {
          flag = {
            environmentId,
            key: row.flag_key,
            total: 0,
            trueCount: 0,
            falseCount: 0,
            newUsers: 0,
            lastSeen: row.evaluated_at,
          }
          perFlag.set(flagId, flag)
        }
        let value = perValue.get(valueId)
        if (!value) {
          value = { environmentId, value: row.value, n: 0 }
          perValue.set(valueId, value)
        }
        let counted = perSeries.get(seriesId)
        if (!counted) {
          counted = { flagId, valueId, n: 0 }
          perSeries.set(seriesId, counted)
        }
        let usersOfFlag = users.get(flagId)
        if (!usersOfFlag) {
          usersOfFlag = new Set()
          users.set(flagId, usersOfFlag)
        }
        s = { flagId, valueId, seriesId, flag, value, series: counted, users: usersOfFlag }
        ofFlag.set(row.value, s)
      }
      const flag = s.flag
      flag.total++
      if (row.value === 'true') flag.trueCount++
      else if (row.value === 'false') flag.falseCount++
      if (row.evaluated_at > flag.lastSeen) flag.lastSeen = row.evaluated_at
      s.series.n++
      s.value.n++
      if (row.user_id !== null) s.users.add(row.user_id)
      tuples.push([
        envId,
        s.flagId,
        s.valueId,
        s.seriesId,
        row.user_id,
        row.context,
        row.evaluated_at,
        batch.receivedAt,
      ])
    }
  }
  // The pairs by flag id then user: PostgreSQL's writers take their row locks in that order. SQLite has one
  // writer at a time, whatever the order, so it skips sorting the users.
  const pairs: Array<[number, string]> = []
  for (const flagId of [...users.keys()].sort(byNumber)) {
    const ofFlag = [...(users.get(flagId) as Set<string>)]
    if (dialect === 'postgres') ofFlag.sort(byText)
    for (const user of ofFlag) pairs.push([flagId, user])
  }
  return {
    rows: chunks(tuples).map((chunk) => rowBindings(dialect, chunk)),
    pairs: chunks(pairs).map((chunk) => pairBindings(dialect, chunk)),
    rowCount: tuples.length,
    pairCount: pairs.length,
    envs: [...perEnv].map(([id, e]) => [id, [e.environmentId], e.n]),
    values: [...perValue].map(([id, v]) => [id, [v.environmentId, v.value], v.n]),
    series: [...perSeries].map(([id, s]) => [id, [s.flagId, s.valueId], s.n]),
    flags: perFlag,
  }
}

/** What a (flag, value) pair of a batch resolves to: its ids and the tallies its rows add to. */
interface SeriesOfBatch {
  flagId: number
  valueId: number
  seriesId: number
  flag: FlagTally
  value: { n: number }
  series: { n: number }
  users: Set<string>
}

/** SQLite plans of single batches, made by `prepareBatch` when they were queued. */
const prepared = new WeakMap<IngestBatch, Plan>()

/**
 * SQLite: plans the batch's statements now, from the ids interned so far, for
 * `ingestBatches` to merge with its group's. The writer calls it as a request
 * queues its batch, while the connection is busy with the group before: the
 * group's own plan is then a concatenation, and the connection waits for
 * (almost) no JavaScript between two groups. Does nothing when a name of the
 * batch is new (the group plans in its transaction, after interning) and on
 * PostgreSQL (two writers keep the database busy meanwhile).
 */
export function prepareBatch(knex: Knex, dialect: Dialect, batch: IngestBatch): void {
  if (dialect !== 'sqlite' || batch.rows.length === 0 || batch.rows.length > ROWS_PER_STATEMENT) return
  const plan = planOf(dialect, [batch], cacheOf(knex))
  if (plan) prepared.set(batch, plan)
}

/** The JSON arrays of single-statement SQLite plans as one array per ROWS_PER_STATEMENT rows. */
function concatArrays(parts: Array<{ json: string; n: number }>): Knex.RawBinding[][] {
  const out: Knex.RawBinding[][] = []
  let open: string[] = []
  let n = 0
  for (const part of parts) {
    if (n > 0 && n + part.n > ROWS_PER_STATEMENT) {
      out.push([`[${open.join(',')}]`])
      open = []
      n = 0
    }
    open.push(part.json.slice(1, -1))
    n += part.n
  }
  if (n > 0) out.push([`[${open.join(',')}]`])
  return out
}

/** SQLite: one plan for a group from its batches' plans (`prepareBatch`, one statement of rows each). */
function mergePlans(plans: Plan[]): Plan {
  const rows: Array<{ json: string; n: number }> = []
  const pairs: Array<{ json: string; n: number }> = []
  const sum = (into: Map<number, StoredIncrement>, increments: StoredIncrement[]) => {
    for (const inc of increments) {
      const seen = into.get(inc[0])
      if (seen) seen[2] += inc[2]
      else into.set(inc[0], [inc[0], inc[1], inc[2]])
    }
  }
  const envs = new Map<number, StoredIncrement>()
  const values = new Map<number, StoredIncrement>()
  const series = new Map<number, StoredIncrement>()
  const flags = new Map<number, FlagTally>()
  for (const plan of plans) {
    for (const [json] of plan.rows) rows.push({ json: json as string, n: plan.rowCount })
    for (const [json] of plan.pairs) pairs.push({ json: json as string, n: plan.pairCount })
    sum(envs, plan.envs)
    sum(values, plan.values)
    sum(series, plan.series)
    for (const [id, f] of plan.flags) {
      const seen = flags.get(id)
      if (!seen) flags.set(id, { ...f })
      else {
        seen.total += f.total
        seen.trueCount += f.trueCount
        seen.falseCount += f.falseCount
        seen.newUsers += f.newUsers
        if (f.lastSeen > seen.lastSeen) seen.lastSeen = f.lastSeen
      }
    }
  }
  // A pair in two batches is inserted once: the second finds it (ON CONFLICT DO NOTHING) and returns nothing.
  return {
    rows: concatArrays(rows),
    pairs: concatArrays(pairs),
    rowCount: rows.reduce((n, r) => n + r.n, 0),
    pairCount: pairs.reduce((n, p) => n + p.n, 0),
    envs: [...envs.values()],
    values: [...values.values()],
    series: [...series.values()],
    flags,
  }
}

/**
 * Interns, in the transaction, the environments, flags, values and series of
 * `live` that `cache` has no id for: environments in sorted order, then flags,
 * values and series, each sorted (series per environment, in that order).
 */
async function internAll(trx: Knex.Transaction, cache: TxCache, live: readonly IngestBatch[]): Promise<void> {
  // Names per environment, environments in sorted order.
  const names = new Map<string, { flags: Set<string>; values: Set<string> }>()
  for (const batch of [...live].sort((a, b) => byText(a.environmentId, b.environmentId))) {
    let n = names.get(batch.environmentId)
    if (!n) {
      n = { flags: new Set(), values: new Set() }
      names.set(batch.environmentId, n)
    }
    for (const row of batch.rows) {
      n.flags.add(row.flag_key)
      n.values.add(row.value)
    }
  }
  for (const environmentId of names.keys()) await internEnvironment(trx, cache, environmentId)
  const flagIds = new Map<string, Map<string, number>>()
  for (const [environmentId, n] of names) {
    flagIds.set(
      environmentId,
      await intern(
        trx,
        cache,
        { table: T.flags, ownerColumn: 'environment_id', nameColumn: 'flag_key', zeros: FLAG_ZEROS },
        environmentId,
        [...n.flags],
      ),
    )
  }
  const valueIds = new Map<string, Map<string, number>>()
  for (const [environmentId, n] of names) {
    valueIds.set(
      environmentId,
      await intern(
        trx,
        cache,
        { table: T.values, ownerColumn: 'environment_id', nameColumn: 'value', zeros: { stored: 0 } },
        environmentId,
        [...n.values],
      ),
    )
  }

  // A series is named by its flag and value ids (globally unique, so no owner); the missing ones per environment.
  const missing = new Map<string, Map<string, { flagId: number; valueId: number }>>()
  for (const batch of live) {
    const flagsOfEnv = flagIds.get(batch.environmentId) as Map<string, number>
    const valuesOfEnv = valueIds.get(batch.environmentId) as Map<string, number>
    let ofEnv = missing.get(batch.environmentId)
    if (!ofEnv) {
      ofEnv = new Map()
      missing.set(batch.environmentId, ofEnv)
    }
    for (const row of batch.rows) {
      const flagId = flagsOfEnv.get(row.flag_key) as number
      const valueId = valuesOfEnv.get(row.value) as number
      const name = `${flagId}:${valueId}`
      if (cache.get(seriesKey(name)) === undefined) ofEnv.set(name, { flagId, valueId })
    }
  }
  for (const environmentId of names.keys()) {
    const series = [...(missing.get(environmentId)?.values() ?? [])]
    if (series.length > 0) {
      series.sort((a, b) => a.flagId - b.flagId || a.valueId - b.valueId)
      for (const chunk of chunks(series, 500)) {
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
        for (const row of found) cache.set(seriesKey(`${Number(row.flag_id)}:${Number(row.value_id)}`), Number(row.id))
      }
    }
  }
}

/**
 * Stores batches and updates the counters, all in one transaction: intern
 * the environments, flags, values and (flag, value) series not seen before
 * (cached, so usually no statement at all); multi-row INSERTs of the rows;
 * the (flag, user) pairs not seen before (INSERT … ON CONFLICT DO NOTHING
 * RETURNING tells which are new); then one multi-row upsert per counter
 * table. Rows of a table are always written in sorted order, and the tables
 * in a fixed order, so concurrent transactions on PostgreSQL take row locks in
 * the same order and cannot deadlock.
 *
 * When every name is interned already (the usual case), the statements'
 * bindings are all computed before the transaction begins, so the connection
 * (SQLite's only one) waits for no JavaScript but the new-user tally.
 */
export async function ingestBatches(knex: Knex, dialect: Dialect, batches: readonly IngestBatch[]): Promise<void> {
  const live = batches.filter((b) => b.rows.length > 0)
  if (live.length === 0) return
  const shared = cacheOf(knex)
  const cache = new TxCache(shared)
  const ready =
    dialect === 'sqlite' && live.every((b) => prepared.has(b))
      ? mergePlans(live.map((b) => prepared.get(b) as Plan))
      : planOf(dialect, live, shared)
  try {
    await knex.transaction(async (trx) => {
      if (dialect === 'sqlite' && !tuned.has(knex)) await tuneSqlite(trx, knex)
      let plan = ready
      if (!plan) {
        await internAll(trx, cache, live)
        plan = planOf(dialect, live, cache) as Plan
      }
      const jsonb = dialect === 'sqlite' && withJsonb.has(knex)
      for (const bindings of plan.rows) await insertRows(trx, dialect, bindings, jsonb)
      for (const bindings of plan.pairs) {
        for (const { flag_id } of await insertNewPairs(trx, dialect, bindings, jsonb)) {
          const flag = plan.flags.get(Number(flag_id))
          if (flag) flag.newUsers++
        }
      }
      // Counters, in table order envs → values → series → flags, each by ascending id.
      if (dialect === 'sqlite') {
        await addCounts(trx, plan, jsonb)
        return
      }
      await addStored(trx, T.envs, ['environment_id'], plan.envs)
      await addStored(trx, T.values, ['environment_id', 'value'], plan.values)
      await addStored(trx, T.series, ['flag_id', 'value_id'], plan.series)
      await addFlagStats(trx, dialect, plan.flags)
    })
  } catch (error) {
    // An interned row may have gone with its environment meanwhile: start from the database next time.
    shared.clear()
    tuned.delete(knex) // and tune the connection again, in case it is a new one
    throw error
  }
  shared.publish(cache.staged)
}

/** env_id, flag_id, value_id, series_id, user_id, context, evaluated_at, received_at */
type ImpressionTuple = [number, number, number, number, string | null, string | null, number, number]

const ROW_COLUMNS = 'env_id, flag_id, value_id, series_id, user_id, context, evaluated_at, received_at'

/**
 * The bindings of one INSERT for many rows without a bound parameter per
 * value: PostgreSQL gets one array per column (`unnest`), SQLite one JSON
 * array of rows (`json_each`). Both parse and plan a short statement, and the
 * driver binds 8 or 1 values instead of thousands.
 */
function rowBindings(dialect: Dialect, rows: ImpressionTuple[]): Knex.RawBinding[] {
  if (dialect === 'postgres') return Array.from({ length: 8 }, (_, c) => rows.map((r) => r[c])) as Knex.RawBinding[]
  return [JSON.stringify(rows)]
}

/**
 * One INSERT of rows, with the bindings of `rowBindings`. On SQLite 3.45 and
 * later `jsonb_each` hands each row over as JSONB, which `->>` reads in place;
 * `json_each` renders each row as JSON text that every `->>` parses again
 * (together a third of the statement's time at 8 columns).
 */
async function insertRows(
  trx: Knex.Transaction,
  dialect: Dialect,
  bindings: Knex.RawBinding[],
  jsonb: boolean,
): Promise<void> {
  if (dialect === 'postgres') {
    await trx.raw(
      `insert into ${T.impressions} (${ROW_COLUMNS}) select * from unnest(?::int[], ?::int[], ?::int[], ?::int[], ?::text[], ?::text[], ?::bigint[], ?::bigint[])`,
      bindings,
    )
    return
  }
  if (jsonb) {
    await trx.raw(
      'insert into flagsync_impressions (env_id, flag_id, value_id, series_id, user_id, context, evaluated_at, received_at) select value ->> 0, value ->> 1, value ->> 2, value ->> 3, value ->> 4, value ->> 5, value ->> 6, value ->> 7 from jsonb_each(?)',
      bindings,
    )
    return
  }
  await trx.raw(
    `insert into ${T.impressions} (${ROW_COLUMNS}) select value ->> 0, value ->> 1, value ->> 2, value ->> 3, value ->> 4, value ->> 5, value ->> 6, value ->> 7 from json_each(?)`,
    bindings,
  )
}

/** The bindings of one INSERT of pairs: two arrays (PostgreSQL) or one JSON array of pairs (SQLite). */
function pairBindings(dialect: Dialect, pairs: Array<[number, string]>): Knex.RawBinding[] {
  if (dialect === 'postgres') return [pairs.map((p) => p[0]), pairs.map((p) => p[1])] as Knex.RawBinding[]
  return [JSON.stringify(pairs)]
}

/** Inserts the (flag, user) pairs not stored yet, in the given order; answers one row per new pair. */
async function insertNewPairs(
  trx: Knex.Transaction,
  dialect: Dialect,
  bindings: Knex.RawBinding[],
  jsonb: boolean,
): Promise<Array<{ flag_id: Num }>> {
  if (dialect === 'postgres') {
    return rowsOf<{ flag_id: Num }>(
      await trx.raw(
        `insert into ${T.users} (flag_id, user_id) select * from unnest(?::int[], ?::text[]) on conflict do nothing returning flag_id`,
        bindings,
      ),
    )
  }
  // `where true` tells SQLite's parser that ON CONFLICT is the upsert clause, not a join's ON.
  if (jsonb) {
    return rowsOf<{ flag_id: Num }>(
      await trx.raw(
        'insert into flagsync_impression_users (flag_id, user_id) select value ->> 0, value ->> 1 from jsonb_each(?) where true on conflict do nothing returning flag_id',
        bindings,
      ),
    )
  }
  return rowsOf<{ flag_id: Num }>(
    await trx.raw(
      `insert into ${T.users} (flag_id, user_id) select value ->> 0, value ->> 1 from json_each(?) where true on conflict do nothing returning flag_id`,
      bindings,
    ),
  )
}

interface FlagTally {
  environmentId: string
  key: string
  total: number
  trueCount: number
  falseCount: number
  newUsers: number
  lastSeen: number
}

/** Adds a transaction's tallies to the flags' lifetime stats and stored rows, by ascending id. */
async function addFlagStats(trx: Knex.Transaction, dialect: Dialect, perFlag: Map<number, FlagTally>): Promise<void> {
  const flags = [...perFlag.entries()].sort((a, b) => byNumber(a[0], b[0]))
  const F = T.flags
  const greatest = dialect === 'postgres' ? 'greatest' : 'max'
  for (const chunk of chunks(flags, 1000)) {
    const bindings: Knex.RawBinding[] = []
    for (const [id, f] of chunk) {
      bindings.push(id, f.environmentId, f.key, f.total, f.trueCount, f.falseCount, f.newUsers, f.lastSeen, f.total)
    }
    await trx.raw(
      `insert into ${F} (id, environment_id, flag_key, total, true_count, false_count, unique_users, last_seen, stored) ` +
        `values ${placeholders(chunk.length, 9)} on conflict (id) do update set ` +
        `total = ${F}.total + excluded.total, true_count = ${F}.true_count + excluded.true_count, ` +
        `false_count = ${F}.false_count + excluded.false_count, unique_users = ${F}.unique_users + excluded.unique_users, ` +
        `last_seen = ${greatest}(${F}.last_seen, excluded.last_seen), stored = ${F}.stored + excluded.stored`,
      bindings,
    )
  }
}

/**
 * SQLite: every counter of a plan in one statement, through the triggers of
 * IMPRESSION_COUNTER_VIEW (kind 0 environments, 1 values, 2 series, 3 flags;
 * each kind by ascending id, as `addStored` and `addFlagStats` write them).
 */
async function addCounts(trx: Knex.Transaction, plan: Plan, jsonb: boolean): Promise<void> {
  const counts: number[][] = []
  for (const [kind, increments] of [plan.envs, plan.values, plan.series].entries()) {
    for (const [id, , n] of [...increments].sort((a, b) => byNumber(a[0], b[0]))) counts.push([kind, id, n, 0, 0, 0, 0])
  }
  for (const [id, f] of [...plan.flags.entries()].sort((a, b) => byNumber(a[0], b[0]))) {
    counts.push([3, id, f.total, f.trueCount, f.falseCount, f.newUsers, f.lastSeen])
  }
  const bindings = [JSON.stringify(counts)]
  if (jsonb) {
    await trx.raw(
      'insert into flagsync_impression_counts (kind, id, n, true_count, false_count, new_users, last_seen) select value ->> 0, value ->> 1, value ->> 2, value ->> 3, value ->> 4, value ->> 5, value ->> 6 from jsonb_each(?)',
      bindings,
    )
    return
  }
  await trx.raw(
    'insert into flagsync_impression_counts (kind, id, n, true_count, false_count, new_users, last_seen) select value ->> 0, value ->> 1, value ->> 2, value ->> 3, value ->> 4, value ->> 5, value ->> 6 from json_each(?)',
    bindings,
  )
}

/** `[id, the other NOT NULL key columns, rows to add]` of an interned row. */
type StoredIncrement = [number, Array<string | number>, number]

/** Adds to `stored` of existing rows, by ascending id, 1000 per statement (an upsert that always updates). */
async function addStored(
  trx: Knex.Transaction,
  table: string,
  keyColumns: string[],
  increments: StoredIncrement[],
): Promise<void> {
  increments.sort((a, b) => byNumber(a[0], b[0]))
  for (const chunk of chunks(increments, 1000)) {
    const bindings: Knex.RawBinding[] = []
    for (const [id, keys, n] of chunk) bindings.push(id, ...keys, n)
    await trx.raw(
      `insert into ${table} (id, ${keyColumns.join(', ')}, stored) values ${placeholders(chunk.length, keyColumns.length + 2)} ` +
        `on conflict (id) do update set stored = ${table}.stored + excluded.stored`,
      bindings,
    )
  }
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
