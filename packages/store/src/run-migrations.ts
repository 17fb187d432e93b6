import type { Knex } from 'knex'
import type { DatabaseConfig } from './database-url.js'

export interface MigrationRun<M> {
  migrationSource: Knex.MigrationSource<M>
  /** knex's bookkeeping table for this list of migrations. */
  tableName: string
  /** PostgreSQL advisory lock key; any constant, the same in every instance, distinct per list. */
  lockKey: number
}

/**
 * Runs a list of migrations so that several instances starting at once do not
 * race to create the schema (knex's own migration lock lives in a table that
 * is itself created racily). PostgreSQL: a session advisory lock serializes
 * them. SQLite: the file lock serializes statements; while the failure is lock
 * contention a loser keeps trying for a bounded time (a loaded machine can hold
 * the lock for seconds), anything else gets a few attempts.
 */
export async function runMigrations<M>(knex: Knex, config: DatabaseConfig, run: MigrationRun<M>): Promise<void> {
  const latest = () => knex.migrate.latest({ migrationSource: run.migrationSource, tableName: run.tableName })
  if (config.dialect === 'postgres') {
    const conn = (await knex.client.acquireConnection()) as unknown
    try {
      await knex.raw('select pg_advisory_lock(?)', [run.lockKey]).connection(conn)
      await latest()
    } finally {
      await knex
        .raw('select pg_advisory_unlock(?)', [run.lockKey])
        .connection(conn)
        .catch(() => {})
      await knex.client.releaseConnection(conn)
    }
    return
  }
  const deadline = Date.now() + 15_000
  for (let attempt = 1; ; attempt++) {
    try {
      await prepareSqliteBookkeeping(knex, run.tableName)
      await latest()
      return
    } catch (error) {
      if (isLockContention(error) ? Date.now() >= deadline : attempt >= 5) throw error
      await new Promise((resolve) => setTimeout(resolve, Math.min(50 * attempt, 500)))
    }
  }
}

/**
 * knex creates its lock row with "select; insert if none", which two instances
 * starting on a fresh file can both do: the table then holds two rows, knex's
 * "update where is_locked = 0" changes both and it reports "already locked"
 * forever. Creating the tables with IF NOT EXISTS and the row in one
 * INSERT ... WHERE NOT EXISTS statement (atomic in SQLite) closes the race;
 * the DELETE repairs a file an earlier version left with duplicates (no
 * instance can hold a duplicated lock, so dropping the extras is safe).
 * The DDL is knex's own for these tables, so knex finds them as it expects.
 */
async function prepareSqliteBookkeeping(knex: Knex, tableName: string): Promise<void> {
  const lock = `${tableName}_lock`
  await knex.raw(
    `create table if not exists ?? (\`id\` integer not null primary key autoincrement, \`name\` varchar(255), \`batch\` integer, \`migration_time\` datetime)`,
    [tableName],
  )
  await knex.raw(
    'create table if not exists ?? (`index` integer not null primary key autoincrement, `is_locked` integer)',
    [lock],
  )
  await knex.raw('insert into ?? (`is_locked`) select 0 where not exists (select 1 from ??)', [lock, lock])
  await knex.raw('delete from ?? where `index` > (select min(`index`) from ??)', [lock, lock])
}

function isLockContention(error: unknown): boolean {
  const e = error as { name?: unknown; code?: unknown }
  return e?.name === 'MigrationLocked' || e?.code === 'SQLITE_BUSY' || e?.code === 'SQLITE_LOCKED'
}
