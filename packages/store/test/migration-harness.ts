import { AuditLog, type Database, FlagStore, openDatabase } from '@flagsync/store'
import { createTestDatabase, type TestDatabase } from '@flagsync/test-support/databases'
import knexFactory, { type Knex } from 'knex'
import { afterEach, beforeEach } from 'vitest'
import { migrationSource } from '../src/migrations.js'

export const flag = (key: string, n: number) => ({ key, n })
export const json = (key: string, n: number) => JSON.stringify(flag(key, n))

/**
 * knex on `url` with only the first `count` migrations applied: the schema an
 * older version left, for tests of the migration that follows.
 */
export async function openWithMigrations(url: string, count: number): Promise<Knex> {
  const knex = url.startsWith('sqlite:')
    ? knexFactory({ client: 'sqlite3', connection: { filename: url.slice('sqlite:'.length) }, useNullAsDefault: true })
    : knexFactory({ client: 'pg', connection: url })
  const all = await migrationSource.getMigrations([])
  await knex.migrate.latest({
    tableName: 'flagsync_migrations',
    migrationSource: { ...migrationSource, getMigrations: async () => all.slice(0, count) },
  })
  return knex
}

/**
 * A fresh test database per test (inside a `describe`), and `open` for the
 * store on it at the latest schema; what was opened is closed after each test.
 */
export function useTestDatabase(dialect: 'sqlite' | 'postgres') {
  const state = { testDb: undefined as TestDatabase | undefined }
  const opened: Database[] = []
  beforeEach(async () => {
    state.testDb = await createTestDatabase(dialect)
  })
  afterEach(async () => {
    await Promise.all(opened.splice(0).map((db) => db.close()))
    await state.testDb?.drop()
  })
  return {
    get url(): string {
      if (!state.testDb) throw new Error('useTestDatabase: no database outside a test')
      return state.testDb.url
    },
    async open(clock?: () => number): Promise<{ db: Database; store: FlagStore; audit: AuditLog }> {
      const db = await openDatabase(this.url)
      opened.push(db)
      return { db, store: new FlagStore(db, clock ? { clock } : {}), audit: new AuditLog(db) }
    },
  }
}
