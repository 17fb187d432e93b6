import type { Knex } from 'knex'
import type { FlagTally, ImpressionTuple, StoredIncrement } from './plan-types.js'
import { ROW_COLUMNS } from './plan-types.js'
import { byNumber, chunks, type Num, placeholders, rowsOf } from './sql-helpers.js'
import { IMPRESSION_TABLES as T } from './tables.js'

// Every statement of the impression store that only PostgreSQL runs. Rows and pairs travel as one array per
// column (`unnest`); the counters are multi-row upserts by ascending id, so concurrent writers take their row
// locks in one order.

/** The integer columns of an ImpressionTuple (env, flag, value, series; evaluated_at, received_at) and its texts. */
const INT_COLUMNS = [0, 1, 2, 3, 6, 7] as const
const TEXT_COLUMNS = [4, 5] as const

/**
 * The bindings of one INSERT for many rows without a bound parameter per value: one array per column
 * (`unnest`). The statement is short to parse and plan, and the driver binds 8 values instead of thousands.
 * Each array goes as its literal text, which is what the driver would send, made in one pass per column
 * (the driver's own serialization quotes and escapes every element, numbers too, one call each).
 */
export function rowBindings(rows: ImpressionTuple[]): Knex.RawBinding[] {
  const bindings: string[] = new Array(8)
  for (const c of INT_COLUMNS) bindings[c] = intArray(rows.map((r) => r[c] as number))
  for (const c of TEXT_COLUMNS) bindings[c] = textArray(rows.map((r) => r[c] as string | null))
  return bindings
}

/** The bindings of one INSERT of pairs: two arrays (as `rowBindings`). */
export function pairBindings(pairs: Array<[number, string]>): Knex.RawBinding[] {
  return [intArray(pairs.map((p) => p[0])), textArray(pairs.map((p) => p[1]))]
}

/** A PostgreSQL array literal of integers (safe integers: `String` never writes an exponent for them). */
function intArray(values: readonly number[]): string {
  return `{${values.join(',')}}`
}

const QUOTED = /["\\]/
const QUOTED_ALL = /["\\]/g

/**
 * A PostgreSQL array literal of texts: each element double-quoted with `"` and `\` escaped by a backslash
 * (inside quotes nothing else is special: braces, commas, spaces and `NULL` stay text), or NULL.
 */
function textArray(values: ReadonlyArray<string | null>): string {
  const parts: string[] = new Array(values.length)
  for (let i = 0; i < values.length; i++) {
    const v = values[i] as string | null
    parts[i] = v === null ? 'NULL' : QUOTED.test(v) ? `"${v.replace(QUOTED_ALL, '\\$&')}"` : `"${v}"`
  }
  return `{${parts.join(',')}}`
}

/** One INSERT of rows, with the bindings of `rowBindings`. */
export async function insertRows(trx: Knex.Transaction, bindings: Knex.RawBinding[]): Promise<void> {
  await trx.raw(
    `insert into ${T.impressions} (${ROW_COLUMNS}) select * from unnest(?::int[], ?::int[], ?::int[], ?::int[], ?::text[], ?::text[], ?::bigint[], ?::bigint[])`,
    bindings,
  )
}

/** Inserts the (flag, user) pairs not stored yet, in the given order; answers one row per new pair. */
export async function insertNewPairs(
  trx: Knex.Transaction,
  bindings: Knex.RawBinding[],
): Promise<Array<{ flag_id: Num }>> {
  return rowsOf<{ flag_id: Num }>(
    await trx.raw(
      `insert into ${T.users} (flag_id, user_id) select * from unnest(?::int[], ?::text[]) on conflict do nothing returning flag_id`,
      bindings,
    ),
  )
}

/** Adds a transaction's tallies to the flags' lifetime stats and stored rows, by ascending id. */
export async function addFlagStats(trx: Knex.Transaction, perFlag: Map<number, FlagTally>): Promise<void> {
  const flags = [...perFlag.entries()].sort((a, b) => byNumber(a[0], b[0]))
  const F = T.flags
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
        `last_seen = greatest(${F}.last_seen, excluded.last_seen), stored = ${F}.stored + excluded.stored`,
      bindings,
    )
  }
}

/** Adds to `stored` of existing rows, by ascending id, 1000 per statement (an upsert that always updates). */
export async function addStored(
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

/** Adds to `stored` and the lifetime `total` of series rows, by ascending id, in one statement (arrays per column). */
export async function addSeries(trx: Knex.Transaction, increments: StoredIncrement[]): Promise<void> {
  if (increments.length === 0) return
  const sorted = [...increments].sort((a, b) => byNumber(a[0], b[0]))
  const counts = sorted.map((s) => s[2])
  await trx.raw(
    'insert into flagsync_impression_series (id, flag_id, value_id, stored, total) select * from unnest(?::int[], ?::int[], ?::int[], ?::bigint[], ?::bigint[]) on conflict (id) do update set stored = flagsync_impression_series.stored + excluded.stored, total = flagsync_impression_series.total + excluded.total',
    [
      sorted.map((s) => s[0]),
      sorted.map((s) => s[1][0]),
      sorted.map((s) => s[1][1]),
      counts,
      counts,
    ] as Knex.RawBinding[],
  )
}

/** The impressions table for a page of the list (the planner picks the index from its statistics). */
export function impressionsFrom(knex: Knex): Knex.Raw {
  return knex.raw(`${T.impressions} as i`)
}
