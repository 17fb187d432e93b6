import type { Knex } from 'knex'

/** Table names, prefixed so the store can share a database with an application. */
export const TABLES = {
  meta: 'flagsync_meta',
  /**
   * Every current flag with its JSON: since 0004 a read-only view of `heads` joined with the change-log row each
   * points at (the flag's JSON is stored once, in the log). Read it; the store alone writes `heads`.
   */
  flags: 'flagsync_flags',
  /** Each live record's newest change-log revision (written by the store only). */
  heads: 'flagsync_heads',
  changes: 'flagsync_changes',
  batches: 'flagsync_batches',
} as const

/** Rows of `flagsync_meta` besides `revision`. */
export const META = {
  /** Every change after this revision is in the log (a follower behind it reloads). */
  prunedThrough: 'pruned_through',
  /**
   * `pruneChanges` drops whole prefixes, also a record's latest state: after it,
   * a record whose last change is older than this has no state in the log.
   */
  prefixPrunedThrough: 'prefix_pruned_through',
} as const

interface Migration {
  name: string
  up(knex: Knex): Promise<void>
}

const migrations: Migration[] = [
  {
    name: '0001_flag_store',
    async up(knex) {
      await knex.schema.createTable(TABLES.meta, (t) => {
        t.string('name', 64).primary()
        t.bigInteger('value').notNullable()
      })
      await knex(TABLES.meta).insert({ name: 'revision', value: 0 })
      await knex.schema.createTable(TABLES.flags, (t) => {
        // scope '' is the flat variant; the environment service uses environment ids.
        t.string('scope', 64).notNullable().defaultTo('')
        t.string('key', 100).notNullable()
        t.text('data').notNullable()
        t.bigInteger('revision').notNullable()
        t.bigInteger('updated_at').notNullable()
        t.primary(['scope', 'key'])
      })
      await knex.schema.createTable(TABLES.changes, (t) => {
        t.bigInteger('revision').primary()
        t.string('scope', 64).notNullable()
        t.string('key', 100).notNullable()
        t.text('data').nullable() // null: the flag was deleted
        t.bigInteger('created_at').notNullable().index()
      })
      await knex.schema.createTable(TABLES.batches, (t) => {
        t.string('batch_id', 128).primary()
        t.integer('applied').notNullable()
        t.bigInteger('applied_at').notNullable().index()
      })
    },
  },
  {
    // The audit trail lives in the change-log rows themselves (no row per change
    // beyond the log's own), and pruning records how far it went so a conflict
    // check knows whether the log still holds a record's state at a base revision.
    name: '0002_audit_trail',
    async up(knex) {
      await knex.schema.alterTable(TABLES.changes, (t) => {
        t.string('actor', 256).nullable()
        t.string('declared_actor', 256).nullable()
        t.string('source', 256).nullable()
        t.string('batch_id', 128).nullable()
        t.integer('op_index').nullable()
        t.index(['scope', 'key', 'revision'], 'flagsync_changes_scope_key_revision')
      })
      // Logs pruned by an earlier version lost everything below their oldest row.
      const oldest = await knex(TABLES.changes).min({ min: 'revision' }).first()
      const current = await knex(TABLES.meta).where('name', 'revision').first('value')
      const pruned = oldest?.min == null ? Number(current?.value ?? 0) : Number(oldest.min) - 1
      await knex(TABLES.meta).insert([
        { name: META.prunedThrough, value: pruned },
        { name: META.prefixPrunedThrough, value: pruned },
      ])
    },
  },
  {
    // The scope/key/revision index cost about as many page writes per batch as the flags
    // table itself (random inserts into an ever-growing B-tree). Each row now points at the
    // previous change of its record instead, so a record's history is a chain walked from its
    // newest row (the flags table's revision, or its last delete); on SQLite the revision is the
    // rowid, one B-tree less.
    name: '0003_change_log_chain',
    async up(knex) {
      const dialect = knex.client.config.client === 'pg' ? 'postgres' : 'sqlite'
      if (dialect === 'sqlite') {
        await knex.raw(`create table "flagsync_changes_chain" (
          revision integer primary key,
          scope varchar(64) not null,
          key varchar(100) not null,
          data text,
          created_at bigint not null,
          actor varchar(256),
          declared_actor varchar(256),
          source varchar(256),
          batch_id varchar(128),
          op_index integer,
          prev_revision bigint
        )`)
        await knex.raw(`insert into "flagsync_changes_chain"
          select revision, scope, key, data, created_at, actor, declared_actor, source, batch_id, op_index,
            lag(revision) over (partition by scope, key order by revision)
          from "flagsync_changes"`)
        await knex.raw(`drop table "flagsync_changes"`)
        await knex.raw(`alter table "flagsync_changes_chain" rename to "flagsync_changes"`)
        await knex.raw(`create index "flagsync_changes_created_at_index" on "flagsync_changes" (created_at)`)
      } else {
        await knex.raw(`alter table "flagsync_changes" add column prev_revision bigint`)
        await knex.raw(`update "flagsync_changes" c set prev_revision = l.prev
          from (select revision, lag(revision) over (partition by scope, key order by revision) as prev
                from "flagsync_changes") l
          where l.revision = c.revision and l.prev is not null`)
        await knex.raw(`drop index "flagsync_changes_scope_key_revision"`)
      }
      // Audit pages per scope, newest first (appends at the end of each scope's range: cheap).
      await knex.raw(`create index "flagsync_changes_scope_revision" on "flagsync_changes" (scope, revision)`)
      // A deleted record has no flags row to start its chain from: deletes are few, so this index is small.
      await knex.raw(
        `create index "flagsync_changes_deletes" on "flagsync_changes" (scope, key, revision) where data is null`,
      )
    },
  },
  {
    // The flags table held a second copy of every flag's JSON (the log row of its last change holds the
    // same string), so each write stored it twice: a 500-flag batch wrote ~98 WAL pages where the flags upsert
    // alone writes ~37. The table of current flags becomes `heads` (scope, key, revision): the JSON is read from
    // the log row a head points at, and `flagsync_flags` stays as a view of the same columns for readers. The
    // store never prunes a row a head points at; rows an earlier prefix prune removed are restored from the table.
    name: '0004_flags_as_log_heads',
    async up(knex) {
      await knex.raw(`create table "flagsync_heads" (
        scope varchar(64) not null,
        key varchar(100) not null,
        revision bigint not null,
        primary key (scope, key)
      )`)
      await knex.raw(`insert into "flagsync_changes" (revision, scope, key, data, created_at)
        select f.revision, f.scope, f.key, f.data, f.updated_at from "flagsync_flags" f
        where not exists (select 1 from "flagsync_changes" c where c.revision = f.revision)`)
      await knex.raw(`insert into "flagsync_heads" (scope, key, revision)
        select scope, key, revision from "flagsync_flags"`)
      await knex.raw(`drop table "flagsync_flags"`)
      await knex.raw(`create view "flagsync_flags" as
        select h.scope, h.key, c.data, h.revision, c.created_at as updated_at
        from "flagsync_heads" h join "flagsync_changes" c on c.revision = h.revision`)
    },
  },
]

/** Migrations live in code, so a bundled or relocated server never loses its migration files. */
export const migrationSource: Knex.MigrationSource<Migration> = {
  getMigrations: async () => migrations,
  getMigrationName: (m) => m.name,
  getMigration: async (m) => ({ up: m.up, down: async () => {} }),
}
