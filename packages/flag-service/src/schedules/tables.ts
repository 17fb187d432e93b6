import type { ServiceMigration } from '../tables.js'

export const SCHEDULES_TABLE = 'flagsync_schedules'

/**
 * Scheduled flag changes: a merge patch to apply to one flag of an environment at `run_at` (epoch ms).
 * `base_revision` is the flag's revision when the schedule was created (the base of the conflict check at
 * apply time); `result` is JSON, set when the schedule leaves `pending`.
 */
export const scheduleMigration: ServiceMigration = {
  name: '0200_schedules',
  async up(knex) {
    await knex.schema.createTable(SCHEDULES_TABLE, (t) => {
      t.increments('id').primary()
      t.string('environment_id', 36).notNullable().references('id').inTable('flagsync_environments').onDelete('CASCADE')
      t.string('flag_key', 100).notNullable()
      t.text('patch').notNullable() // the validated merge patch, as JSON
      t.bigInteger('run_at').notNullable()
      t.string('status', 16).notNullable()
      t.string('created_by', 254).notNullable() // the creator's email (or an SDK key's display prefix)
      t.string('created_by_actor', 512).notNullable() // the audit trail's name for the creator
      // Who may not approve: the creating user, or the creating SDK key.
      t.integer('created_by_user_id').nullable().references('id').inTable('flagsync_users').onDelete('SET NULL')
      t.integer('created_by_key_id').nullable()
      t.string('approved_by', 254).nullable()
      t.string('approved_by_actor', 512).nullable()
      t.bigInteger('approved_at').nullable()
      t.bigInteger('base_revision').nullable()
      t.bigInteger('created_at').notNullable()
      t.bigInteger('applied_at').nullable()
      t.text('result').nullable()
      t.index(['status', 'run_at'])
      t.index(['environment_id', 'flag_key'])
    })
  },
}
