import type { Knex } from 'knex'

// Table names and the migration type: a leaf every layer may import. Each feature keeps its own tables and
// migrations beside its code (flags/, impressions/); migrations.ts composes the list.

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
  /** Who changed which user's role, name or password, and when (never the password). */
  peopleAudit: 'flagsync_people_audit',
  /** The flags feature's (its `CHANGE_REQUESTS_TABLE` and migration); named here too so this list has every table. */
  changeRequests: 'flagsync_change_requests',
} as const

/** knex's bookkeeping table for this list, apart from the flag store's `flagsync_migrations`. */
export const SERVICE_MIGRATIONS_TABLE = 'flagsync_service_migrations'

/** One schema change, run once per database in a transaction on every dialect. */
export interface ServiceMigration {
  /** Sorted by name: prefix with the next number (`0002_…`). Never rename or edit one that has shipped. */
  name: string
  up(knex: Knex): Promise<void>
}
