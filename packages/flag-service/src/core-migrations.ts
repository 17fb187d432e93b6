import { SERVICE_TABLES, type ServiceMigration } from './tables.js'

/**
 * The core schema changes (workspace, users, sessions, tokens, projects,
 * environments, SDK keys), oldest first. Features keep their own lists. Append new entries; each
 * runs once per database, in a transaction, on every dialect. Timestamps are
 * epoch milliseconds (`bigInteger`), turned into ISO 8601 strings in responses.
 * Child rows reference their parents with ON DELETE CASCADE, so deleting a
 * project or an environment removes everything under it (SQLite enforces
 * foreign keys: the store turns `PRAGMA foreign_keys` on).
 */
export const serviceMigrations: ServiceMigration[] = [
  {
    name: '0001_workspace_users_projects',
    async up(knex) {
      const T = SERVICE_TABLES
      await knex.schema.createTable(T.workspace, (t) => {
        // One workspace per database: the row with id 1.
        t.integer('id').primary()
        t.string('name', 100).notNullable()
        t.bigInteger('created_at').notNullable()
      })
      await knex.schema.createTable(T.users, (t) => {
        t.increments('id').primary()
        t.string('email', 254).notNullable().unique() // stored lowercased
        t.string('name', 100).notNullable()
        t.string('role', 16).notNullable()
        t.string('password_hash', 255).notNullable()
        t.bigInteger('created_at').notNullable()
      })
      await knex.schema.createTable(T.sessions, (t) => {
        t.string('id_hash', 64).primary() // SHA-256 (hex) of the cookie value
        t.integer('user_id').notNullable().references('id').inTable(T.users).onDelete('CASCADE').index()
        t.bigInteger('created_at').notNullable()
        t.bigInteger('expires_at').notNullable().index()
      })
      await knex.schema.createTable(T.loginFailures, (t) => {
        t.increments('id').primary()
        t.string('email', 254).notNullable() // as typed, lowercased: unknown addresses are tracked too
        t.bigInteger('failed_at').notNullable().index() // pruned by age, whatever the email
        t.index(['email', 'failed_at'])
      })
      await knex.schema.createTable(T.tokens, (t) => {
        t.increments('id').primary()
        t.integer('user_id').notNullable().references('id').inTable(T.users).onDelete('CASCADE').index()
        t.string('name', 100).notNullable()
        t.string('scope', 16).notNullable()
        t.string('token_hash', 64).notNullable().unique()
        t.string('prefix', 32).notNullable()
        t.bigInteger('created_at').notNullable()
        t.bigInteger('last_used_at').nullable()
        t.bigInteger('expires_at').nullable()
      })
      await knex.schema.createTable(T.projects, (t) => {
        t.string('id', 36).primary()
        t.string('name', 100).notNullable()
        t.string('slug', 64).notNullable().unique()
        t.bigInteger('created_at').notNullable()
      })
      await knex.schema.createTable(T.members, (t) => {
        t.string('project_id', 36).notNullable().references('id').inTable(T.projects).onDelete('CASCADE')
        t.integer('user_id').notNullable().references('id').inTable(T.users).onDelete('CASCADE').index()
        t.string('role', 16).notNullable()
        t.bigInteger('created_at').notNullable()
        t.primary(['project_id', 'user_id'])
      })
      await knex.schema.createTable(T.environments, (t) => {
        t.string('id', 36).primary()
        t.string('project_id', 36).notNullable().references('id').inTable(T.projects).onDelete('CASCADE')
        t.string('name', 100).notNullable()
        t.string('slug', 64).notNullable()
        t.string('color', 7).notNullable()
        t.boolean('is_default').notNullable()
        t.boolean('require_approval').notNullable()
        t.integer('position').notNullable() // creation order within the project (lists use it)
        t.bigInteger('created_at').notNullable()
        t.unique(['project_id', 'slug'])
      })
      await knex.schema.createTable(T.sdkKeys, (t) => {
        t.increments('id').primary()
        t.string('project_id', 36).notNullable().references('id').inTable(T.projects).onDelete('CASCADE').index()
        t.string('environment_id', 36)
          .notNullable()
          .references('id')
          .inTable(T.environments)
          .onDelete('CASCADE')
          .index()
        t.string('name', 100).notNullable()
        t.string('key_hash', 64).notNullable().unique()
        t.string('prefix', 32).notNullable()
        t.bigInteger('created_at').notNullable()
      })
    },
  },
  {
    // Environments can be reordered (PUT …/environments/order): positions become 1…n per project, unique, so a
    // list's order is always total. Older databases are renumbered first in the order they listed.
    name: '0002_environment_positions_unique',
    async up(knex) {
      const T = SERVICE_TABLES
      const rows = (await knex(T.environments)
        .select('id', 'project_id')
        .orderBy([
          { column: 'project_id' },
          { column: 'position' },
          { column: 'created_at' },
          { column: 'id' },
        ])) as Array<{
        id: string
        project_id: string
      }>
      const next = new Map<string, number>()
      for (const row of rows) {
        const position = (next.get(row.project_id) ?? 0) + 1
        next.set(row.project_id, position)
        await knex(T.environments).where('id', row.id).update({ position })
      }
      await knex.schema.alterTable(T.environments, (t) => {
        t.unique(['project_id', 'position'])
      })
    },
  },
  {
    // SDK keys have a kind: 'server' (sk_live_…, acts as a project admin) or 'client' (pk_live_…, may be shown
    // in a page: evaluates flags over OFREP and reports impressions for its environment, nothing else).
    // Every key created before kinds existed is a server key.
    name: '0003_sdk_key_kind',
    async up(knex) {
      await knex.schema.alterTable(SERVICE_TABLES.sdkKeys, (t) => {
        t.string('kind', 16).notNullable().defaultTo('server')
      })
    },
  },
]
