import type { Knex } from 'knex'

/** The parts of a node-sqlite3 statement and connection used here. */
interface SqliteStatement {
  all(params: unknown[], callback: (err: Error | null, rows: unknown[]) => void): void
  run(params: unknown[], callback: (err: Error | null) => void): void
  finalize(): void
}

interface SqliteConnection {
  prepare(sql: string): SqliteStatement
  close(callback?: (err: Error | null) => void): void
}

/**
 * Statements kept per connection: the write path's fixed ones plus a few row counts of the change-log insert
 * (its SQL depends on the number of rows); the least recently used one is finalized beyond this.
 */
const MAX_STATEMENTS = 12

const caches = new WeakMap<SqliteConnection, Map<string, SqliteStatement>>()

/**
 * Runs one of the write path's statements on the transaction's SQLite connection through a prepared statement
 * kept for that connection. knex prepares, runs and finalizes every query (a round trip to the driver's thread
 * each, and the SQL compiled again): for the 500-row change-log insert the compilation alone was about a third
 * of the statement's time. `sql` must be a literal of this package (the cache is keyed by it); values are bound.
 */
export async function sqliteAll<T>(trx: Knex.Transaction, sql: string, bindings: readonly unknown[]): Promise<T[]> {
  const statement = statementFor((await trx.client.acquireConnection()) as SqliteConnection, sql)
  return new Promise((resolve, reject) => {
    statement.all([...bindings], (err, rows) => (err ? reject(err) : resolve(rows as T[])))
  })
}

/** `sqliteAll` for statements without rows to return. */
export async function sqliteRun(trx: Knex.Transaction, sql: string, bindings: readonly unknown[]): Promise<void> {
  const statement = statementFor((await trx.client.acquireConnection()) as SqliteConnection, sql)
  return new Promise((resolve, reject) => {
    statement.run([...bindings], (err) => (err ? reject(err) : resolve()))
  })
}

function statementFor(conn: SqliteConnection, sql: string): SqliteStatement {
  let cache = caches.get(conn)
  if (!cache) {
    cache = new Map()
    caches.set(conn, cache)
    finalizeBeforeClose(conn, cache)
  }
  let statement = cache.get(sql)
  if (statement) {
    // Most recently used last: Map keeps insertion order.
    cache.delete(sql)
  } else {
    statement = conn.prepare(sql)
    const oldest = cache.size >= MAX_STATEMENTS ? cache.keys().next().value : undefined
    if (oldest !== undefined) {
      cache.get(oldest)?.finalize()
      cache.delete(oldest)
    }
  }
  cache.set(sql, statement)
  return statement
}

/** SQLite refuses to close a connection with unfinalized statements (SQLITE_BUSY, the file stays open). */
function finalizeBeforeClose(conn: SqliteConnection, cache: Map<string, SqliteStatement>): void {
  const close = conn.close.bind(conn)
  conn.close = (callback) => {
    for (const statement of cache.values()) statement.finalize()
    cache.clear()
    close(callback)
  }
}
