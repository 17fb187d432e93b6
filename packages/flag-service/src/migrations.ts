import { type Database, runMigrations } from '@flagsync/store'
import type { Knex } from 'knex'
import { auditMigrations } from './audit/migrations.js'
import { serviceMigrations } from './core-migrations.js'
import { flagMigrations } from './flags/index.js'
import { impressionMigrations } from './impressions/index.js'
import { scheduleMigrations } from './schedules/index.js'
import { SERVICE_MIGRATIONS_TABLE, type ServiceMigration } from './tables.js'
import { peopleMigrations } from './users/migrations.js'
import { webhookMigrations } from './webhooks/index.js'

// The one place that knows every feature's migrations: near the top, beside the app's assembly, so no feature
// imports it (features import table names and the migration type from tables.ts).

const migrationSource: Knex.MigrationSource<ServiceMigration> = {
  // Each feature keeps its migrations beside its code; names (0002_…, 0003_…) fix the order.
  getMigrations: async () =>
    [
      ...serviceMigrations,
      ...flagMigrations,
      ...impressionMigrations,
      ...webhookMigrations,
      ...scheduleMigrations,
      ...peopleMigrations,
      ...auditMigrations,
    ].sort((a, b) => a.name.localeCompare(b.name)),
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
