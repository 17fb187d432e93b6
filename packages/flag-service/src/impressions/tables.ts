import type { ServiceMigration } from '../migrations.js'
import { SERVICE_TABLES } from '../migrations.js'

/**
 * The impression tables. Every one references its environment with ON DELETE
 * CASCADE, so deleting an environment or a project removes its impressions,
 * counters and rollups on both dialects.
 */
export const IMPRESSION_TABLES = {
  /** One row per reported evaluation; dropped by retention. */
  impressions: 'flagsync_impressions',
  /** Lifetime rollup per (environment, flag): what the stats route answers. Never decremented. */
  stats: 'flagsync_impression_stats',
  /** Rows currently stored per (environment, flag, value): the list's `total` without counting millions of rows. */
  counts: 'flagsync_impression_counts',
  /** Every (environment, flag, user) ever seen: the lifetime `unique_users` of the rollup. */
  users: 'flagsync_impression_users',
} as const

/** Index names, so the query planner can be told (SQLite `INDEXED BY`) and the plans checked by name. */
export const IMPRESSION_INDEXES = {
  byEnv: 'flagsync_impressions_env_id',
  byFlag: 'flagsync_impressions_env_flag_id',
  byUser: 'flagsync_impressions_env_user_id',
  byValue: 'flagsync_impressions_env_value_id',
  byFlagValue: 'flagsync_impressions_env_flag_value_id',
} as const

/** Field limits of an impression; they also keep every index entry below PostgreSQL's btree tuple limit. */
export const IMPRESSION_LIMITS = {
  /** Items per POST (document 1 §8): more is a 413. */
  batch: 500,
  flagKeyLength: 100,
  userIdLength: 256,
  /** UTF-16 code units; a longer evaluated value is a 422 (the flag client truncates what it sends). */
  valueLength: 512,
  /** Characters of the context serialized as JSON. */
  contextLength: 4096,
  listDefault: 50,
  listMax: 200,
} as const

const T = IMPRESSION_TABLES
const I = IMPRESSION_INDEXES

export const impressionMigrations: ServiceMigration[] = [
  {
    name: '0200_impressions',
    async up(knex) {
      const env = SERVICE_TABLES.environments
      await knex.schema.createTable(T.impressions, (t) => {
        // AUTOINCREMENT on SQLite: ids never go back, even when retention empties the table (since_id pollers rely on it).
        t.bigIncrements('id').primary()
        t.string('environment_id', 36).notNullable().references('id').inTable(env).onDelete('CASCADE')
        t.string('flag_key', IMPRESSION_LIMITS.flagKeyLength).notNullable()
        t.string('user_id', IMPRESSION_LIMITS.userIdLength).nullable()
        t.string('value', IMPRESSION_LIMITS.valueLength).notNullable()
        t.text('context').nullable() // JSON text
        t.bigInteger('evaluated_at').notNullable()
        t.bigInteger('received_at').notNullable()
        // One index per access path of the list route; each ends with id, so a page is a range scan in id order
        // (newest first, or after since_id) that stops after `limit` rows. The first also serves the cascade.
        t.index(['environment_id', 'id'], I.byEnv)
        t.index(['environment_id', 'flag_key', 'id'], I.byFlag)
        t.index(['environment_id', 'user_id', 'id'], I.byUser)
        t.index(['environment_id', 'value', 'id'], I.byValue)
        t.index(['environment_id', 'flag_key', 'value', 'id'], I.byFlagValue)
      })
      await knex.schema.createTable(T.stats, (t) => {
        t.string('environment_id', 36).notNullable().references('id').inTable(env).onDelete('CASCADE')
        t.string('flag_key', IMPRESSION_LIMITS.flagKeyLength).notNullable()
        t.bigInteger('total').notNullable()
        t.bigInteger('true_count').notNullable()
        t.bigInteger('false_count').notNullable()
        t.bigInteger('unique_users').notNullable()
        t.bigInteger('last_seen').notNullable() // the latest evaluated_at
        t.primary(['environment_id', 'flag_key'])
      })
      await knex.schema.createTable(T.counts, (t) => {
        t.string('environment_id', 36).notNullable().references('id').inTable(env).onDelete('CASCADE')
        t.string('flag_key', IMPRESSION_LIMITS.flagKeyLength).notNullable()
        t.string('value', IMPRESSION_LIMITS.valueLength).notNullable()
        t.bigInteger('stored').notNullable()
        t.primary(['environment_id', 'flag_key', 'value'])
      })
      await knex.schema.createTable(T.users, (t) => {
        t.string('environment_id', 36).notNullable().references('id').inTable(env).onDelete('CASCADE')
        t.string('flag_key', IMPRESSION_LIMITS.flagKeyLength).notNullable()
        t.string('user_id', IMPRESSION_LIMITS.userIdLength).notNullable()
        t.primary(['environment_id', 'flag_key', 'user_id'])
      })
    },
  },
]
