import type { ServiceMigration } from '../tables.js'

export const CHANGE_REQUESTS_TABLE = 'flagsync_change_requests'

export const changeRequestMigration: ServiceMigration = {
  name: '0100_change_requests',
  async up(knex) {
    await knex.schema.createTable(CHANGE_REQUESTS_TABLE, (t) => {
      t.increments('id').primary()
      t.string('environment_id', 36).notNullable().references('id').inTable('flagsync_environments').onDelete('CASCADE')
      t.string('flag_key', 100).notNullable()
      t.text('patch').notNullable() // the validated merge patch, as JSON
      t.string('requested_by', 254).notNullable() // the requester's email (or an SDK key's display prefix)
      // Who may not approve and may cancel: the requesting user, or the requesting SDK key.
      t.integer('requested_by_user_id').nullable().references('id').inTable('flagsync_users').onDelete('SET NULL')
      t.integer('requested_by_key_id').nullable()
      t.string('status', 16).notNullable()
      t.string('reviewed_by', 254).nullable()
      t.text('reason').nullable()
      t.bigInteger('created_at').notNullable()
      t.bigInteger('reviewed_at').nullable()
      t.index(['environment_id', 'status'])
    })
  },
}

/**
 * The flag revision a request was filed against (approval of a
 * request whose flag changed since is a 409 unless forced; lists mark it
 * stale), and the sync batch operation that filed it (a replayed batch
 * answers the same request ids). Requests filed before have none: never stale.
 */
export const changeRequestBaseMigration: ServiceMigration = {
  name: '0101_change_request_base',
  async up(knex) {
    await knex.schema.alterTable(CHANGE_REQUESTS_TABLE, (t) => {
      t.bigInteger('base_revision').nullable()
      t.string('batch_id', 128).nullable()
      t.integer('op_index').nullable()
      t.index(['batch_id'])
    })
  },
}
