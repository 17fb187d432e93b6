import type { Knex } from 'knex'
import { cacheOf, envKey, flagKey, type IdLookup, seriesKey, valueKey } from './intern.js'
import type { FlagTally, ImpressionTuple, Plan, StoredIncrement } from './plan-types.js'
import { byNumber, byText, chunks, ROWS_PER_STATEMENT } from './sql-helpers.js'
import * as postgres from './sql-postgres.js'
import * as sqlite from './sql-sqlite.js'
import type { Dialect, ImpressionRow, IngestBatch } from './types.js'

// Planning: everything an ingest transaction writes, worked out from interned ids before it begins, so the
// connection (SQLite's only one) waits for no JavaScript but the new-user tally.

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

/** A plan in the making: per flag the lifetime stats and users; per environment, value, series and flag the stored rows. */
interface Tallies {
  perFlag: Map<number, FlagTally>
  perEnv: Map<number, { environmentId: string; n: number }>
  perValue: Map<number, { environmentId: string; value: string; n: number }>
  perSeries: Map<number, { flagId: number; valueId: number; n: number }>
  users: Map<number, Set<string>>
  tuples: ImpressionTuple[]
}

/**
 * Everything a transaction writes, from interned ids alone; undefined when
 * a name has no id in `ids` yet (the transaction interns it first).
 */
export function planOf(dialect: Dialect, live: readonly IngestBatch[], ids: IdLookup): Plan | undefined {
  const t: Tallies = {
    perFlag: new Map(),
    perEnv: new Map(),
    perValue: new Map(),
    perSeries: new Map(),
    users: new Map(),
    tuples: [],
  }
  for (const batch of live) if (!tallyBatch(t, batch, ids)) return undefined
  const pairs = pairsOf(dialect, t.users)
  const sql = dialect === 'postgres' ? postgres : sqlite
  return {
    rows: chunks(t.tuples).map((chunk) => sql.rowBindings(chunk)),
    pairs: chunks(pairs).map((chunk) => sql.pairBindings(chunk)),
    rowCount: t.tuples.length,
    pairCount: pairs.length,
    envs: [...t.perEnv].map(([id, e]) => [id, [e.environmentId], e.n]),
    values: [...t.perValue].map(([id, v]) => [id, [v.environmentId, v.value], v.n]),
    series: [...t.perSeries].map(([id, s]) => [id, [s.flagId, s.valueId], s.n]),
    flags: t.perFlag,
  }
}

/** Adds one batch to the tallies; false when a name of it has no id yet. */
function tallyBatch(t: Tallies, batch: IngestBatch, ids: IdLookup): boolean {
  const environmentId = batch.environmentId
  const envId = ids.get(envKey(environmentId))
  if (envId === undefined) return false
  const env = t.perEnv.get(envId) ?? { environmentId, n: 0 }
  env.n += batch.rows.length
  t.perEnv.set(envId, env)
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
      s = seriesOfBatch(t, ids, environmentId, row)
      if (!s) return false
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
    t.tuples.push([
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
  return true
}

/** The ids and tallies of a (flag, value) pair of a batch, created at its first row; undefined when an id is missing. */
function seriesOfBatch(
  t: Tallies,
  ids: IdLookup,
  environmentId: string,
  row: ImpressionRow,
): SeriesOfBatch | undefined {
  const flagId = ids.get(flagKey(environmentId, row.flag_key))
  const valueId = ids.get(valueKey(environmentId, row.value))
  if (flagId === undefined || valueId === undefined) return undefined
  const seriesId = ids.get(seriesKey(`${flagId}:${valueId}`))
  if (seriesId === undefined) return undefined
  let flag = t.perFlag.get(flagId)
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
    t.perFlag.set(flagId, flag)
  }
  let value = t.perValue.get(valueId)
  if (!value) {
    value = { environmentId, value: row.value, n: 0 }
    t.perValue.set(valueId, value)
  }
  let counted = t.perSeries.get(seriesId)
  if (!counted) {
    counted = { flagId, valueId, n: 0 }
    t.perSeries.set(seriesId, counted)
  }
  let usersOfFlag = t.users.get(flagId)
  if (!usersOfFlag) {
    usersOfFlag = new Set()
    t.users.set(flagId, usersOfFlag)
  }
  return { flagId, valueId, seriesId, flag, value, series: counted, users: usersOfFlag }
}

/**
 * The pairs by flag id then user: PostgreSQL's writers take their row locks in that order. SQLite has one
 * writer at a time, whatever the order, so it skips sorting the users.
 */
function pairsOf(dialect: Dialect, users: Map<number, Set<string>>): Array<[number, string]> {
  const pairs: Array<[number, string]> = []
  for (const flagId of [...users.keys()].sort(byNumber)) {
    const ofFlag = [...(users.get(flagId) as Set<string>)]
    if (dialect === 'postgres') ofFlag.sort(byText)
    for (const user of ofFlag) pairs.push([flagId, user])
  }
  return pairs
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

/** SQLite: the group's plan from its batches' prepared plans; undefined unless every batch has one. */
export function preparedPlan(live: readonly IngestBatch[]): Plan | undefined {
  if (!live.every((b) => prepared.has(b))) return undefined
  return mergePlans(live.map((b) => prepared.get(b) as Plan))
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
  const envs = new Map<number, StoredIncrement>()
  const values = new Map<number, StoredIncrement>()
  const series = new Map<number, StoredIncrement>()
  const flags = new Map<number, FlagTally>()
  for (const plan of plans) {
    for (const [json] of plan.rows) rows.push({ json: json as string, n: plan.rowCount })
    for (const [json] of plan.pairs) pairs.push({ json: json as string, n: plan.pairCount })
    sumIncrements(envs, plan.envs)
    sumIncrements(values, plan.values)
    sumIncrements(series, plan.series)
    sumFlags(flags, plan.flags)
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

function sumIncrements(into: Map<number, StoredIncrement>, increments: StoredIncrement[]): void {
  for (const inc of increments) {
    const seen = into.get(inc[0])
    if (seen) seen[2] += inc[2]
    else into.set(inc[0], [inc[0], inc[1], inc[2]])
  }
}

function sumFlags(into: Map<number, FlagTally>, flags: Map<number, FlagTally>): void {
  for (const [id, f] of flags) {
    const seen = into.get(id)
    if (!seen) into.set(id, { ...f })
    else {
      seen.total += f.total
      seen.trueCount += f.trueCount
      seen.falseCount += f.falseCount
      seen.newUsers += f.newUsers
      if (f.lastSeen > seen.lastSeen) seen.lastSeen = f.lastSeen
    }
  }
}
