import type { Knex } from 'knex'
import { cacheOf, internAll, TxCache } from './intern.js'
import { planOf, preparedPlan } from './plan.js'
import type { Plan } from './plan-types.js'
import * as postgres from './sql-postgres.js'
import * as sqlite from './sql-sqlite.js'
import { IMPRESSION_TABLES as T } from './tables.js'
import type { Dialect, ImpressionRow, IngestBatch } from './types.js'

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
  const ready = (dialect === 'sqlite' ? preparedPlan(live) : undefined) ?? planOf(dialect, live, shared)
  try {
    await knex.transaction(async (trx) => {
      if (dialect === 'sqlite') await sqlite.tuneSqlite(trx, knex)
      let plan = ready
      if (!plan) {
        await internAll(trx, cache, live)
        plan = planOf(dialect, live, cache) as Plan
      }
      if (dialect === 'sqlite') await writeSqlite(trx, plan, sqlite.hasJsonb(knex))
      else await writePostgres(trx, plan)
    })
  } catch (error) {
    // An interned row may have gone with its environment meanwhile: start from the database next time.
    shared.clear()
    sqlite.forgetTuning(knex) // and tune the connection again, in case it is a new one
    throw error
  }
  shared.publish(cache.staged)
}

/** A plan's rows, new pairs and counters on SQLite: the counters in one statement. */
async function writeSqlite(trx: Knex.Transaction, plan: Plan, jsonb: boolean): Promise<void> {
  for (const bindings of plan.rows) await sqlite.insertRows(trx, bindings, jsonb)
  for (const bindings of plan.pairs) countNewUsers(plan, await sqlite.insertNewPairs(trx, bindings, jsonb))
  await sqlite.addCounts(trx, plan, jsonb)
}

/** A plan's rows, new pairs and counters on PostgreSQL: counters in table order envs → values → series → flags. */
async function writePostgres(trx: Knex.Transaction, plan: Plan): Promise<void> {
  for (const bindings of plan.rows) await postgres.insertRows(trx, bindings)
  for (const bindings of plan.pairs) countNewUsers(plan, await postgres.insertNewPairs(trx, bindings))
  await postgres.addStored(trx, T.envs, ['environment_id'], plan.envs)
  await postgres.addStored(trx, T.values, ['environment_id', 'value'], plan.values)
  await postgres.addSeries(trx, plan.series)
  await postgres.addFlagStats(trx, plan.flags)
}

/** A flag's unique users grow by the pairs that were new. */
function countNewUsers(plan: Plan, inserted: ReadonlyArray<{ flag_id: string | number }>): void {
  for (const { flag_id } of inserted) {
    const flag = plan.flags.get(Number(flag_id))
    if (flag) flag.newUsers++
  }
}
