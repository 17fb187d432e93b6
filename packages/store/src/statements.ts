import type { Knex } from 'knex'
import type { DatabaseConfig } from './database-url.js'
import type { AuditContext, FlagChange } from './types.js'

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

/**
 * One change-log row to append: `json` is the flag's JSON, null for a delete;
 * `opIndex` the batch operation that made it (audit trail).
 */
type ChangeRow = Pick<FlagChange, 'scope' | 'key' | 'json'> & { opIndex: number | null }

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
  audit: AuditContext = {},
): Promise<void> {
  // The audit context is the same for every row of a write: bound once, not per row.
  const who = [audit.actor ?? null, audit.declaredActor ?? null, audit.source ?? null, audit.batchId ?? null]
  if (dialect === 'postgres') {
    await trx.raw(
      `insert into "flagsync_changes"
         (revision, scope, key, data, created_at, actor, declared_actor, source, batch_id, op_index)
       select ?::bigint + c.n, c.scope, c.key, c.data, ?::bigint, ?, ?, ?, ?, c.op
       from unnest(?::text[], ?::text[], ?::text[], ?::int[]) with ordinality as c(scope, key, data, op, n)`,
      // pg sends JS arrays as array literals (null elements as NULL); knex's types do not know that.
      [
        base,
        now,
        ...who,
        rows.map((r) => r.scope),
        rows.map((r) => r.key),
        rows.map((r) => r.json),
        rows.map((r) => r.opIndex),
      ] as Knex.RawBinding[],
    )
    return
  }
  // json_each's `key` is the 0-based array index.
  await trx.raw(
    `insert into "flagsync_changes"
       (revision, scope, key, data, created_at, actor, declared_actor, source, batch_id, op_index)
     select ? + key + 1, value ->> 0, value ->> 1, value ->> 2, ?, ?, ?, ?, ?, value ->> 3 from json_each(?)`,
    [base, now, ...who, JSON.stringify(rows.map((r) => [r.scope, r.key, r.json, r.opIndex]))],
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

/** The stored JSON and revision of those of `keys` that exist in `scope`. */
export async function selectFlags(
  trx: Knex.Transaction,
  dialect: Dialect,
  scope: string,
  keys: string[],
): Promise<Array<{ key: string; data: string; revision: number | string }>> {
  if (dialect === 'postgres') {
    return rowsOf(
      await trx.raw(`select key, data, revision from "flagsync_flags" where scope = ? and key = any(?::text[])`, [
        scope,
        keys,
      ]),
    )
  }
  return rowsOf(
    await trx.raw(
      `select key, data, revision from "flagsync_flags" where scope = ? and key in (select value from json_each(?))`,
      [scope, JSON.stringify(keys)],
    ),
  )
}

/**
 * For each `[key, revision]` pair, the key's newest change-log row at or
 * before that revision: `found` 0 when there is none, `data` null for a
 * delete. One statement for any number of pairs (the index on
 * scope, key, revision makes each lookup one seek).
 */
export async function selectStatesAt(
  trx: Knex.Transaction,
  dialect: Dialect,
  scope: string,
  pairs: ReadonlyArray<readonly [key: string, revision: number]>,
): Promise<Array<{ key: string; revision: number | string; found: number | string; data: string | null }>> {
  if (dialect === 'postgres') {
    return rowsOf(
      await trx.raw(
        `select p.key, p.rev as revision, (l.revision is not null)::int as found, l.data
         from unnest(?::text[], ?::bigint[]) as p(key, rev)
         left join lateral (
           select c.revision, c.data from "flagsync_changes" c
           where c.scope = ? and c.key = p.key and c.revision <= p.rev
           order by c.revision desc limit 1
         ) l on true`,
        [pairs.map((p) => p[0]), pairs.map((p) => p[1]), scope] as Knex.RawBinding[],
      ),
    )
  }
  return rowsOf(
    await trx.raw(
      `select p.value ->> 0 as key, p.value ->> 1 as revision,
         exists (select 1 from "flagsync_changes" c
                 where c.scope = ? and c.key = p.value ->> 0 and c.revision <= p.value ->> 1) as found,
         (select c.data from "flagsync_changes" c
          where c.scope = ? and c.key = p.value ->> 0 and c.revision <= p.value ->> 1
          order by c.revision desc limit 1) as data
       from json_each(?) p`,
      [scope, scope, JSON.stringify(pairs)],
    ),
  )
}

export async function readMeta(trx: Knex | Knex.Transaction, name: string): Promise<number> {
  const row = (await trx('flagsync_meta').where('name', name).first('value')) as { value: number | string } | undefined
  return Number(row?.value ?? 0)
}
