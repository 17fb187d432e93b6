import type { Knex } from 'knex'
import { byText, chunks, type Num, placeholders } from './sql-helpers.js'
import { IMPRESSION_TABLES as T } from './tables.js'
import type { IngestBatch } from './types.js'

// Environments, flags, values and (flag, value) series are interned as small integers (see tables.ts). Ids are
// cached per database handle, so an ingest transaction usually interns nothing at all.

/** Interned ids by cache key (a shared cache: published ids only; a transaction's: its own new ids too). */
export interface IdLookup {
  get(key: string): number | undefined
}

export const envKey = (environmentId: string) => `${T.envs}\u0000${environmentId}`
export const flagKey = (environmentId: string, key: string) => `${T.flags}\u0000${environmentId}\u0000${key}`
export const valueKey = (environmentId: string, value: string) => `${T.values}\u0000${environmentId}\u0000${value}`
export const seriesKey = (name: string) => `${T.series}\u0000${name}`

/** Interned ids are read again from the database after this long (ms), whatever happened meanwhile. */
const INTERN_MAX_AGE_MS = 10 * 60_000

/** Bumped when the retention job deletes interned rows: every cache of the process starts over. */
let generation = 0

/** Drops every cached id of the process (the retention job deleted interned rows). */
export function forgetInternedIds(): void {
  generation++
}

/**
 * Interned ids by name, per database handle. Ids are never reused. A row
 * disappears with its environment (whose requests then answer 404), or when
 * the retention job forgets a flag the environment no longer has and whose
 * impressions are all gone, or a value no flag's kept impressions use: that
 * job clears the process's caches, and every cache starts over after
 * `INTERN_MAX_AGE_MS` anyway, so another process never keeps such an id for
 * long (the job only deletes rows idle for a whole retention period, far
 * longer). A transaction stages the ids it creates and publishes them after
 * its commit: an id another transaction has not committed yet is never handed
 * out (it could roll back, and waiting on its row lock could deadlock).
 */
export class InternCache {
  private readonly map = new Map<string, number>()
  private generation = generation
  private since = Date.now()
  get(key: string): number | undefined {
    return this.map.get(key)
  }
  publish(entries: Map<string, number>): void {
    if (this.map.size + entries.size > 100_000) this.map.clear()
    for (const [key, id] of entries) this.map.set(key, id)
  }
  clear(): void {
    this.map.clear()
    this.generation = generation
    this.since = Date.now()
  }
  /** Clears the cache when the retention job deleted interned rows or it is older than INTERN_MAX_AGE_MS. */
  refresh(): void {
    if (this.generation !== generation || Date.now() - this.since > INTERN_MAX_AGE_MS) this.clear()
  }
}

/** The cache as one transaction sees it: its own new ids first, published only after the commit. */
export class TxCache {
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
export function cacheOf(knex: Knex): InternCache {
  let cache = caches.get(knex)
  if (!cache) {
    cache = new InternCache()
    caches.set(knex, cache)
  }
  cache.refresh()
  return cache
}

const FLAG_ZEROS = { total: 0, true_count: 0, false_count: 0, unique_users: 0, last_seen: 0, stored: 0 }

/** The flag and value names of each environment of a group. */
type NamesOf = Map<string, { flags: Set<string>; values: Set<string> }>

/**
 * Interns, in the transaction, the environments, flags, values and series of
 * `live` that `cache` has no id for: environments in sorted order, then flags,
 * values and series, each sorted (series per environment, in that order).
 */
export async function internAll(trx: Knex.Transaction, cache: TxCache, live: readonly IngestBatch[]): Promise<void> {
  const names = namesByEnvironment(live)
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
  const missing = missingSeries(cache, live, flagIds, valueIds)
  for (const environmentId of names.keys()) {
    const series = [...(missing.get(environmentId)?.values() ?? [])]
    if (series.length > 0) await internSeries(trx, cache, series)
  }
}

/** Names per environment, environments in sorted order. */
function namesByEnvironment(live: readonly IngestBatch[]): NamesOf {
  const names: NamesOf = new Map()
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
  return names
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

interface SeriesName {
  flagId: number
  valueId: number
}

/** A series is named by its flag and value ids (globally unique, so no owner); the missing ones per environment. */
function missingSeries(
  cache: TxCache,
  live: readonly IngestBatch[],
  flagIds: Map<string, Map<string, number>>,
  valueIds: Map<string, Map<string, number>>,
): Map<string, Map<string, SeriesName>> {
  const missing = new Map<string, Map<string, SeriesName>>()
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
  return missing
}

/** Interns one environment's new series, sorted by flag id then value id. */
async function internSeries(trx: Knex.Transaction, cache: TxCache, series: SeriesName[]): Promise<void> {
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
