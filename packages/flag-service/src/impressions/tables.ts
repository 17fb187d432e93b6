import { SERVICE_TABLES, type ServiceMigration } from '../tables.js'

/**
 * The impression tables. Environments, flags, values and (flag, value) pairs
 * are interned as small integers, so every index of the big table is a narrow
 * (integer, id) key: that is what keeps ingest fast. The interned rows carry
 * the counters, so every total except a user's is one row lookup.
 *
 * Cascades: `envs`, `flags` and `values` reference the environment, `series`
 * and `users` their flag, and impressions their `envs` row, all ON DELETE
 * CASCADE (impressions on PostgreSQL through a trigger instead of a foreign
 * key: migration 0203), so deleting an environment or a project removes everything.
 */
export const IMPRESSION_TABLES = {
  /** One row per reported evaluation; dropped by retention. */
  impressions: 'flagsync_impressions',
  /** Environment → integer id, with the number of stored rows (the unfiltered `total`). */
  envs: 'flagsync_impression_envs',
  /** (environment, flag) → integer id, with the lifetime stats (never decremented) and the stored rows. */
  flags: 'flagsync_impression_flags',
  /** (environment, value) → integer id, with the stored rows. */
  values: 'flagsync_impression_values',
  /** (flag, value) → integer id, with the stored rows and the lifetime count (`total`, never decremented). */
  series: 'flagsync_impression_series',
  /** Every (flag, user) ever seen: the lifetime `unique_users`. */
  users: 'flagsync_impression_users',
} as const

/** The indexes of the impressions table: one per access path of the list, each ending with id. */
export const IMPRESSION_INDEXES = {
  byEnv: { name: 'flagsync_impressions_env_id', columns: ['env_id', 'id'] },
  byFlag: { name: 'flagsync_impressions_flag_id', columns: ['flag_id', 'id'] },
  byValue: { name: 'flagsync_impressions_value_id', columns: ['value_id', 'id'] },
  bySeries: { name: 'flagsync_impressions_series_id', columns: ['series_id', 'id'] },
  byUser: { name: 'flagsync_impressions_env_user_id', columns: ['env_id', 'user_id', 'id'] },
} as const

export type ImpressionIndex = (typeof IMPRESSION_INDEXES)[keyof typeof IMPRESSION_INDEXES]

/** Field limits of an impression; they also keep every index entry below PostgreSQL's btree tuple limit. */
export const IMPRESSION_LIMITS = {
  /** Items per POST (the flag service's limits): more is a 413. */
  batch: 500,
  flagKeyLength: 100,
  userIdLength: 256,
  /** UTF-16 code units; a longer evaluated value is a 422 (the flag client truncates what it sends). */
  valueLength: 512,
  /** Characters of the context serialized as JSON. */
  contextLength: 4096,
  listDefault: 50,
  listMax: 200,
  /** Stats entries per page of the paged stats route: default and most. */
  statsPageDefault: 100,
  statsPageMax: 1000,
  /** Stats entries of the answer without paging parameters at most (then a `Link` names the next page). */
  statsUnpaged: 10_000,
  /** Served values per stats entry (the most evaluated ones). */
  statsValues: 20,
} as const

const T = IMPRESSION_TABLES
const L = IMPRESSION_LIMITS

export const impressionMigrations: ServiceMigration[] = [
  {
    name: '0200_impressions',
    async up(knex) {
      const environments = SERVICE_TABLES.environments
      await knex.schema.createTable(T.envs, (t) => {
        t.increments('id').primary()
        t.string('environment_id', 36).notNullable().unique().references('id').inTable(environments).onDelete('CASCADE')
        t.bigInteger('stored').notNullable()
      })
      await knex.schema.createTable(T.flags, (t) => {
        t.increments('id').primary()
        t.string('environment_id', 36).notNullable().references('id').inTable(environments).onDelete('CASCADE')
        t.string('flag_key', L.flagKeyLength).notNullable()
        t.bigInteger('total').notNullable()
        t.bigInteger('true_count').notNullable()
        t.bigInteger('false_count').notNullable()
        t.bigInteger('unique_users').notNullable()
        t.bigInteger('last_seen').notNullable() // the latest evaluated_at
        t.bigInteger('stored').notNullable()
        t.unique(['environment_id', 'flag_key'])
      })
      await knex.schema.createTable(T.values, (t) => {
        t.increments('id').primary()
        t.string('environment_id', 36).notNullable().references('id').inTable(environments).onDelete('CASCADE')
        t.string('value', L.valueLength).notNullable()
        t.bigInteger('stored').notNullable()
        t.unique(['environment_id', 'value'])
      })
      await knex.schema.createTable(T.series, (t) => {
        t.increments('id').primary()
        t.integer('flag_id').notNullable().references('id').inTable(T.flags).onDelete('CASCADE')
        t.integer('value_id').notNullable().references('id').inTable(T.values).onDelete('CASCADE').index()
        t.bigInteger('stored').notNullable()
        t.unique(['flag_id', 'value_id'])
      })
      await knex.schema.createTable(T.users, (t) => {
        t.integer('flag_id').notNullable().references('id').inTable(T.flags).onDelete('CASCADE')
        t.string('user_id', L.userIdLength).notNullable()
        t.primary(['flag_id', 'user_id'])
      })
      await knex.schema.createTable(T.impressions, (t) => {
        // AUTOINCREMENT on SQLite: ids never go back, even when retention empties the table (since_id pollers rely on it).
        t.bigIncrements('id').primary()
        // The one foreign key: flag, value and series rows belong to the same environment and go with it.
        t.integer('env_id').notNullable().references('id').inTable(T.envs).onDelete('CASCADE')
        t.integer('flag_id').notNullable()
        t.integer('value_id').notNullable()
        t.integer('series_id').notNullable()
        t.string('user_id', L.userIdLength).nullable()
        t.text('context').nullable() // JSON text
        t.bigInteger('evaluated_at').notNullable()
        t.bigInteger('received_at').notNullable()
        for (const index of Object.values(IMPRESSION_INDEXES)) t.index([...index.columns], index.name)
      })
    },
  },
  {
    // One statement for every counter of a group instead of one per table: on SQLite each statement of the
    // group's transaction waits its turn on the event loop, behind the requests being parsed meanwhile.
    // PostgreSQL (two writers, no such wait) keeps the four upserts. The view flagsync_impression_counts has
    // INSTEAD OF INSERT triggers that add one row's counts to the interned row it names (`kind` 0 an environment,
    // 1 a value, 2 a series, 3 a flag with its lifetime stats).
    name: '0201_impression_counter_view',
    async up(knex) {
      if ((knex.client as { config: { client?: unknown } }).config.client !== 'sqlite3') return
      await knex.raw(
        'create view flagsync_impression_counts as select 0 as kind, 0 as id, 0 as n, 0 as true_count, 0 as false_count, 0 as new_users, 0 as last_seen where 0',
      )
      await knex.raw(
        'create trigger flagsync_impression_counts_envs instead of insert on flagsync_impression_counts when new.kind = 0 begin update flagsync_impression_envs set stored = stored + new.n where id = new.id; end',
      )
      await knex.raw(
        'create trigger flagsync_impression_counts_values instead of insert on flagsync_impression_counts when new.kind = 1 begin update flagsync_impression_values set stored = stored + new.n where id = new.id; end',
      )
      await knex.raw(
        'create trigger flagsync_impression_counts_series instead of insert on flagsync_impression_counts when new.kind = 2 begin update flagsync_impression_series set stored = stored + new.n where id = new.id; end',
      )
      await knex.raw(
        'create trigger flagsync_impression_counts_flags instead of insert on flagsync_impression_counts when new.kind = 3 begin update flagsync_impression_flags set total = total + new.n, true_count = true_count + new.true_count, false_count = false_count + new.false_count, unique_users = unique_users + new.new_users, last_seen = max(last_seen, new.last_seen), stored = stored + new.n where id = new.id; end',
      )
    },
  },
  {
    // Per served value lifetime counts (the stats' `values`): a series counts its impressions like a flag does.
    // Series stored before count from the rows kept then.
    name: '0202_impression_series_totals',
    async up(knex) {
      await knex.schema.alterTable(T.series, (t) => {
        t.bigInteger('total').notNullable().defaultTo(0)
      })
      await knex(T.series).update({ total: knex.ref('stored') })
      if ((knex.client as { config: { client?: unknown } }).config.client !== 'sqlite3') return
      await knex.raw('drop trigger flagsync_impression_counts_series')
      await knex.raw(
        'create trigger flagsync_impression_counts_series instead of insert on flagsync_impression_counts when new.kind = 2 begin update flagsync_impression_series set stored = stored + new.n, total = total + new.n where id = new.id; end',
      )
    },
  },
  {
    // PostgreSQL checks a foreign key once per inserted row (a query that locks the referenced row), which was a
    // third of the database's work at ingest: every row of a batch names the same environment row, which each
    // transaction also updates (its `stored`), so every check walks that row's versions and, with two writers,
    // a shared lock's member list. A trigger keeps the cascade: deleting an `envs` row (its environment or project
    // deleted) deletes its impressions. Ingest still cannot store rows of an environment deleted meanwhile: the
    // same transaction upserts the `envs` row, whose own foreign key (on the environment) fails then. SQLite's
    // foreign key check is a cheap index probe and stays.
    name: '0203_impression_env_cascade_trigger',
    async up(knex) {
      if ((knex.client as { config: { client?: unknown } }).config.client === 'sqlite3') return
      await knex.raw('alter table flagsync_impressions drop constraint if exists flagsync_impressions_env_id_foreign')
      await knex.raw(
        'create function flagsync_impression_envs_cascade() returns trigger language plpgsql as $$ begin delete from flagsync_impressions where env_id = old.id; return null; end $$',
      )
      await knex.raw(
        'create trigger flagsync_impression_envs_cascade after delete on flagsync_impression_envs for each row execute function flagsync_impression_envs_cascade()',
      )
    },
  },
]
