// The receiver bench's baseline table: the flags table as it was before migration 0004 made `flagsync_flags` a view
// of the log's heads (the same columns and primary key), so the baselines do the same work as before: one upsert of
// the rows with their JSON. A copy of that DDL on purpose: it must stay the old table's work as migrations change.

const BASELINE_TABLE = 'baseline_flags'

/** @param {import('knex').Knex} knex */
export async function createBaselineTable(knex) {
  await knex.schema.createTable(BASELINE_TABLE, (t) => {
    t.string('scope', 64).notNullable().defaultTo('')
    t.string('key', 100).notNullable()
    t.text('data').notNullable()
    t.bigInteger('revision').notNullable()
    t.bigInteger('updated_at').notNullable()
    t.primary(['scope', 'key'])
  })
}

/**
 * The baseline's write: one multi-row upsert in one transaction.
 * @param {import('knex').Knex} knex @param {{ scope: string, key: string, data: string, revision: number, updated_at: number }[]} rows
 */
export function upsertBaselineRows(knex, rows) {
  return knex.transaction(async (trx) => {
    await trx(BASELINE_TABLE).insert(rows).onConflict(['scope', 'key']).merge(['data', 'revision', 'updated_at'])
  })
}
