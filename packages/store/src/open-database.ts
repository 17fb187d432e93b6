import { mkdirSync } from 'node:fs'
import { dirname } from 'node:path'
import knexFactory, { type Knex } from 'knex'
import { assertDriverInstalled, type DriverResolver } from './database-driver.js'
import { type DatabaseConfig, parseDatabaseUrl } from './database-url.js'
import { migrationSource } from './migrations.js'
import { runMigrations } from './run-migrations.js'
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
  /**
   * How the driver package (`sqlite3` or `pg`) is located before knex loads it; a missing one is a
   * `DriverMissingError`. Defaults to Node's resolution from this package.
   */
  resolveDriver?: DriverResolver
}

/**
 * Opens the database named by a DATABASE_URL and brings its schema up to date. Throws a
 * `DriverMissingError` (code `driver_missing`) when the URL's driver package is not installed.
 */
export async function openDatabase(url: string, options: OpenDatabaseOptions = {}): Promise<Database> {
  const config = parseDatabaseUrl(url)
  assertDriverInstalled(config, options.resolveDriver)
  const knex = config.dialect === 'sqlite' ? openSqlite(config.filename, options) : openPostgres(config, options)
  try {
    await runMigrations(knex, config, { migrationSource, tableName: 'flagsync_migrations', lockKey: 7_263_517_001 })
  } catch (error) {
    await knex.destroy()
    throw toStoreError(error)
  }
  return { knex, config, close: () => knex.destroy() }
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
      // WAL lets readers in other processes work while one writes. temp_store is set here, before any statement:
      // SQLite refuses to change it inside a transaction once the connection has used temporary storage.
      afterCreate(conn: SqliteConnection, done: (err: Error | null, conn: SqliteConnection) => void) {
        conn.exec(
          `PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA busy_timeout = ${busyTimeout}; PRAGMA foreign_keys = ON; PRAGMA temp_store = MEMORY;`,
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
