import { type Database, runMigrations } from '@flagsync/store'
import type { Knex } from 'knex'
import { flagMigrations } from './flags/index.js'
import { impressionMigrations } from './impressions/index.js'

/** The service's own tables, next to the flag store's (`flagsync_flags` holds flags with scope = environment id). */
export const SERVICE_TABLES = {
  workspace: 'flagsync_workspace',
  users: 'flagsync_users',
  sessions: 'flagsync_sessions',
  loginFailures: 'flagsync_login_failures',
  tokens: 'flagsync_tokens',
  projects: 'flagsync_projects',
  members: 'flagsync_project_members',
  environments: 'flagsync_environments',
  sdkKeys: 'flagsync_sdk_keys',
  changeRequests: 'flagsync_change_requests',
} as const

/** knex's bookkeeping table for this list, apart from the flag store's `flagsync_migrations`. */
export const SERVICE_MIGRATIONS_TABLE = 'flagsync_service_migrations'

export interface ServiceMigration {
  /** Sorted by name: prefix with the next number (`0002_…`). Never rename or edit one that has shipped. */
  name: string
  up(knex: Knex): Promise<void>
}

/**
 * Every schema change of the service, oldest first. Append new entries; each
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
]

const migrationSource: Knex.MigrationSource<ServiceMigration> = {
  // Each feature keeps its migrations beside its code; names (0002_…, 0003_…) fix the order.
  getMigrations: async () =>
    [...serviceMigrations, ...flagMigrations, ...impressionMigrations].sort((a, b) => a.name.localeCompare(b.name)),
  getMigrationName: (m) => m.name,
  getMigration: async (m) => ({ up: m.up, down: async () => {} }),
}

// Not the flag store's key: the two lists migrate one after the other, each under its own lock.
const MIGRATION_LOCK_KEY = 7_263_517_009

/** Brings the service's tables up to date, after `openDatabase` ran the flag store's. */
export async function migrateService(db: Database): Promise<void> {
  await runMigrations(db.knex, db.config, {
    migrationSource,
    tableName: SERVICE_MIGRATIONS_TABLE,
    lockKey: MIGRATION_LOCK_KEY,
  })
}
