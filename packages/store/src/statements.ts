import type { Knex } from 'knex'
import type { DatabaseConfig } from './database-url.js'
import type { FlagChange } from './types.js'

/**
 * The write path's SQL, one statement per step whatever the number of rows.
 *
 * Raw SQL instead of the query builder: for a 500-flag batch the builder's
 * per-value work (and a 2 500-placeholder statement SQLite must parse each
 * time) cost more than the database's own work. Every statement is a literal
 * (table names included) and every value is bound: many rows travel as one
 * JSON array (SQLite `json_each`) or as arrays (PostgreSQL `unnest`), so the
 * SQL text never depends on the data.
 */

type Dialect = DatabaseConfig['dialect']

/** One change-log row to append: `json` is the flag's JSON, null for a delete. */
type ChangeRow = Pick<FlagChange, 'scope' | 'key' | 'json'>

/** Rows of a raw query: knex hands back the driver's result (pg: `{ rows }`, sqlite3: the rows themselves). */
function rowsOf<T>(result: unknown): T[] {
  return Array.isArray(result) ? (result as T[]) : (result as { rows: T[] }).rows
}

/**
 * Takes the revision row's lock (PostgreSQL's row lock, SQLite's write lock)
 * and reads the current revision in the same statement.
 */
export async function lockRevision(trx: Knex.Transaction): Promise<number> {
  const rows = rowsOf<{ value: number | string }>(
    await trx.raw(`update "flagsync_meta" set value = value where name = 'revision' returning value`),
  )
  return Number(rows[0]?.value ?? 0)
}

export async function setRevision(trx: Knex.Transaction, revision: number): Promise<void> {
  await trx.raw(`update "flagsync_meta" set value = ? where name = 'revision'`, [revision])
}

/** Appends `rows` to the change log with revisions `base + 1`, `base + 2`, … in order. */
export async function appendChanges(
  trx: Knex.Transaction,
  dialect: Dialect,
  rows: readonly ChangeRow[],
  base: number,
  now: number,
): Promise<void> {
  if (dialect === 'postgres') {
    await trx.raw(
      `insert into "flagsync_changes" (revision, scope, key, data, created_at)
       select ?::bigint + c.n, c.scope, c.key, c.data, ?::bigint
       from unnest(?::text[], ?::text[], ?::text[]) with ordinality as c(scope, key, data, n)`,
      // pg sends JS arrays as array literals (null elements as NULL); knex's types do not know that.
      [base, now, rows.map((r) => r.scope), rows.map((r) => r.key), rows.map((r) => r.json)] as Knex.RawBinding[],
    )
    return
  }
  // json_each's `key` is the 0-based array index.
  await trx.raw(
    `insert into "flagsync_changes" (revision, scope, key, data, created_at)
     select ? + key + 1, value ->> 0, value ->> 1, value ->> 2, ? from json_each(?)`,
    [base, now, JSON.stringify(rows.map((r) => [r.scope, r.key, r.json]))],
  )
}

/**
 * Brings the flags table in line with the change-log entries after `base`:
 * upserts the changed flags and, when `deletes`, removes the deleted ones.
 * Copying inside the database sends each flag's JSON over once, not twice.
 */
export async function applyChangesToFlags(trx: Knex.Transaction, base: number, deletes: boolean): Promise<void> {
  await trx.raw(
    `insert into "flagsync_flags" (scope, key, data, revision, updated_at)
     select scope, key, data, revision, created_at from "flagsync_changes" where revision > ? and data is not null
     on conflict (scope, key) do update
     set data = excluded.data, revision = excluded.revision, updated_at = excluded.updated_at`,
    [base],
  )
  if (!deletes) return
  await trx.raw(
    `delete from "flagsync_flags"
     where (scope, key) in (select scope, key from "flagsync_changes" where revision > ? and data is null)`,
    [base],
  )
}

/** The stored JSON of those of `keys` that exist in `scope`. */
export async function selectFlags(
  trx: Knex.Transaction,
  dialect: Dialect,
  scope: string,
  keys: string[],
): Promise<Array<{ key: string; data: string }>> {
  if (dialect === 'postgres') {
    return rowsOf(
      await trx.raw(`select key, data from "flagsync_flags" where scope = ? and key = any(?::text[])`, [scope, keys]),
    )
  }
  return rowsOf(
    await trx.raw(
      `select key, data from "flagsync_flags" where scope = ? and key in (select value from json_each(?))`,
      [scope, JSON.stringify(keys)],
    ),
  )
}
