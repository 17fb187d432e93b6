import { mkdirSync } from 'node:fs'
import { dirname } from 'node:path'
import knexFactory, { type Knex } from 'knex'
import { type DatabaseConfig, parseDatabaseUrl } from './database-url.js'
import { migrationSource } from './migrations.js'
import { toStoreError } from './store-error.js'

export interface Database {
  readonly knex: Knex
  readonly config: DatabaseConfig
  close(): Promise<void>
}

export interface OpenDatabaseOptions {
  /** PostgreSQL pool size; SQLite always uses one connection per process (writes serialize anyway). */
  poolMax?: number
  /** How long SQLite waits for another process's write lock before failing with SQLITE_BUSY. */
  busyTimeoutMs?: number
}

/** Opens the database named by a DATABASE_URL and brings its schema up to date. */
export async function openDatabase(url: string, options: OpenDatabaseOptions = {}): Promise<Database> {
  const config = parseDatabaseUrl(url)
  const knex = config.dialect === 'sqlite' ? openSqlite(config.filename, options) : openPostgres(config, options)
  try {
    await migrate(knex, config)
  } catch (error) {
    await knex.destroy()
    throw toStoreError(error)
  }
  return { knex, config, close: () => knex.destroy() }
}

// Any constant works; it only has to be the same in every instance.
const MIGRATION_LOCK_KEY = 7_263_517_001

/**
 * Several instances starting at once must not race to create the schema:
 * knex's own migration lock lives in a table that is itself created racily.
 * PostgreSQL: a session advisory lock serializes them. SQLite: the file lock
 * serializes statements, and a loser of the race simply tries again.
 */
async function migrate(knex: Knex, config: DatabaseConfig): Promise<void> {
  const run = () => knex.migrate.latest({ migrationSource, tableName: 'flagsync_migrations' })
  if (config.dialect === 'postgres') {
    const conn = (await knex.client.acquireConnection()) as unknown
    try {
      await knex.raw('select pg_advisory_lock(?)', [MIGRATION_LOCK_KEY]).connection(conn)
      await run()
    } finally {
      await knex
        .raw('select pg_advisory_unlock(?)', [MIGRATION_LOCK_KEY])
        .connection(conn)
        .catch(() => {})
      await knex.client.releaseConnection(conn)
    }
    return
  }
  // On a loaded machine the winner can hold knex's migration lock (or the file lock) for seconds: while
  // the failure is that lock, losers keep trying for a bounded time; anything else gets a few attempts.
  const deadline = Date.now() + 15_000
  for (let attempt = 1; ; attempt++) {
    try {
      await run()
      return
    } catch (error) {
      if (isLockContention(error) ? Date.now() >= deadline : attempt >= 5) throw error
      await new Promise((resolve) => setTimeout(resolve, Math.min(50 * attempt, 500)))
    }
  }
}

function isLockContention(error: unknown): boolean {
  const e = error as { name?: unknown; code?: unknown }
  return e?.name === 'MigrationLocked' || e?.code === 'SQLITE_BUSY' || e?.code === 'SQLITE_LOCKED'
}

function openSqlite(filename: string, options: OpenDatabaseOptions): Knex {
  if (filename !== ':memory:') mkdirSync(dirname(filename), { recursive: true })
  const busyTimeout = options.busyTimeoutMs ?? 5000
  return knexFactory({
    client: 'sqlite3',
    connection: { filename },
    useNullAsDefault: true,
    pool: {
      min: 1,
      max: 1,
      // WAL lets readers in other processes work while one writes.
      afterCreate(conn: SqliteConnection, done: (err: Error | null, conn: SqliteConnection) => void) {
        conn.exec(
          `PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA busy_timeout = ${busyTimeout}; PRAGMA foreign_keys = ON;`,
          (err) => done(err, conn),
        )
      },
    },
  })
}

interface SqliteConnection {
  exec(sql: string, callback: (err: Error | null) => void): void
}

function openPostgres(config: Extract<DatabaseConfig, { dialect: 'postgres' }>, options: OpenDatabaseOptions): Knex {
  return knexFactory({
    client: 'pg',
    connection: config.connectionString,
    pool: { min: 0, max: options.poolMax ?? 10 },
    acquireConnectionTimeout: 10_000,
  })
}
