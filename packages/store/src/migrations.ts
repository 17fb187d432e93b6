import type { Knex } from 'knex'

/** Table names, prefixed so the store can share a database with an application. */
export const TABLES = {
  meta: 'flagsync_meta',
  flags: 'flagsync_flags',
  changes: 'flagsync_changes',
  batches: 'flagsync_batches',
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
]

/** Migrations live in code, so a bundled or relocated server never loses its migration files. */
export const migrationSource: Knex.MigrationSource<Migration> = {
  getMigrations: async () => migrations,
  getMigrationName: (m) => m.name,
  getMigration: async (m) => ({ up: m.up, down: async () => {} }),
}
