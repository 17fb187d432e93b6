import type { Knex } from 'knex'
import type { ImpressionTuple, Plan } from './plan-types.js'
import { ROW_COLUMNS } from './plan-types.js'
import { byNumber, type Num, rowsOf } from './sql-helpers.js'
import type { ImpressionIndex } from './tables.js'
import { IMPRESSION_TABLES as T } from './tables.js'

// Every statement of the impression store that only SQLite runs. Rows and pairs travel as one JSON array per
// statement (`json_each`, or `jsonb_each` where the library has it), and every counter of a group goes in one
// statement through the triggers of the view flagsync_impression_counts (migration 0201).

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
 * (the statement journal is kept in memory by the store's connection setup, `temp_store = MEMORY`: SQLite refuses
 *   to change it inside a transaction once the connection has used temporary storage).
 * It also notes whether the library has `jsonb_each` (see `insertRows`). Runs once per handle.
 */
export async function tuneSqlite(trx: Knex.Transaction, knex: Knex): Promise<void> {
  if (tuned.has(knex)) return
  await trx.raw('pragma cache_size = -65536')
  await trx.raw('pragma wal_autocheckpoint = 10000')
  const [row] = (await trx.raw('select sqlite_version() as version')) as Array<{ version: string }>
  const [major = 0, minor = 0] = (row?.version ?? '').split('.').map(Number)
  if (major > 3 || (major === 3 && minor >= 45)) withJsonb.add(knex)
  else withJsonb.delete(knex)
  tuned.add(knex)
}

/** After a failed transaction: tune the connection again next time, in case it is a new one. */
export function forgetTuning(knex: Knex): void {
  tuned.delete(knex)
}

/** Whether the handle's library has `jsonb_each` (known once `tuneSqlite` ran). */
export function hasJsonb(knex: Knex): boolean {
  return withJsonb.has(knex)
}

/**
 * The bindings of one INSERT for many rows without a bound parameter per value: one JSON array of rows
 * (`json_each`). The statement is short to parse and plan, and the driver binds one value instead of thousands.
 */
export function rowBindings(rows: ImpressionTuple[]): Knex.RawBinding[] {
  return [JSON.stringify(rows)]
}

/** The bindings of one INSERT of pairs: one JSON array of pairs. */
export function pairBindings(pairs: Array<[number, string]>): Knex.RawBinding[] {
  return [JSON.stringify(pairs)]
}

/**
 * One INSERT of rows, with the bindings of `rowBindings`. On SQLite 3.45 and
 * later `jsonb_each` hands each row over as JSONB, which `->>` reads in place;
 * `json_each` renders each row as JSON text that every `->>` parses again
 * (together a third of the statement's time at 8 columns).
 */
export async function insertRows(trx: Knex.Transaction, bindings: Knex.RawBinding[], jsonb: boolean): Promise<void> {
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

/** Inserts the (flag, user) pairs not stored yet, in the given order; answers one row per new pair. */
export async function insertNewPairs(
  trx: Knex.Transaction,
  bindings: Knex.RawBinding[],
  jsonb: boolean,
): Promise<Array<{ flag_id: Num }>> {
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

/**
 * Every counter of a plan in one statement, through the triggers of
 * flagsync_impression_counts (kind 0 environments, 1 values, 2 series, 3 flags;
 * each kind by ascending id, as PostgreSQL's `addStored` and `addFlagStats` write them).
 */
export async function addCounts(trx: Knex.Transaction, plan: Plan, jsonb: boolean): Promise<void> {
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

/**
 * The impressions table for a page of the list, naming the index that answers it: SQLite's planner has no
 * statistics on a fresh database, and naming the index keeps every filter on its range scan.
 */
export function impressionsFrom(knex: Knex, index: ImpressionIndex): Knex.Raw {
  return knex.raw(`${T.impressions} as i indexed by ${index.name}`)
}
