import type { Knex } from 'knex'
import type { DatabaseConfig } from './database-url.js'
import { sqliteAll, sqliteRun } from './sqlite-statements.js'
import type { AuditContext, FlagChange } from './types.js'

/**
 * The write path's SQL, one statement per step whatever the number of rows.
 *
 * Raw SQL instead of the query builder: for a 500-flag batch the builder's
 * per-value work cost more than the database's own work. On SQLite they run as
 * statements prepared once per connection (`sqlite-statements.ts`). Every statement is a
 * literal (table names included) and every value is bound, so the SQL text
 * never depends on the data: many rows travel as arrays (PostgreSQL `unnest`),
 * as one JSON array (SQLite `json_each`, for keys) or as one placeholder group
 * per row (SQLite change-log rows, whose JSON a JSON array would escape again).
 */

type Dialect = DatabaseConfig['dialect']

/**
 * One change-log row to append: `json` is the flag's JSON, null for a delete;
 * `opIndex` the batch operation that made it and `audit` its own audit context, if any (audit trail).
 */
type ChangeRow = Pick<FlagChange, 'scope' | 'key' | 'json' | 'audit'> & { opIndex: number | null }

/** Rows of a raw query: knex hands back the driver's result (pg: `{ rows }`, sqlite3: the rows themselves). */
export function rowsOf<T>(result: unknown): T[] {
  return Array.isArray(result) ? (result as T[]) : (result as { rows: T[] }).rows
}

/**
 * Takes the revision row's lock (PostgreSQL's row lock, SQLite's write lock)
 * and reads the current revision in the same statement.
 */
export async function lockRevision(trx: Knex.Transaction, dialect: Dialect): Promise<number> {
  const rows =
    dialect === 'sqlite'
      ? await sqliteAll<{ value: number }>(
          trx,
          `update "flagsync_meta" set value = value where name = 'revision' returning value`,
          [],
        )
      : rowsOf<{ value: number | string }>(
          await trx.raw(`update "flagsync_meta" set value = value where name = 'revision' returning value`),
        )
  return Number(rows[0]?.value ?? 0)
}

export async function setRevision(trx: Knex.Transaction, dialect: Dialect, revision: number): Promise<void> {
  if (dialect === 'sqlite')
    await sqliteRun(trx, `update "flagsync_meta" set value = ? where name = 'revision'`, [revision])
  else await trx.raw(`update "flagsync_meta" set value = ? where name = 'revision'`, [revision])
}

/**
 * The revision of a record's newest change-log row, as an SQL expression: its
 * head's revision while it exists, else its last delete (the partial
 * index of deletes keeps that one seek). Null when the log never saw it.
 */
export function headOf(scope: string, key: string): string {
  return `coalesce(
    (select h.revision from "flagsync_heads" h where h.scope = ${scope} and h.key = ${key}),
    (select max(d.revision) from "flagsync_changes" d where d.scope = ${scope} and d.key = ${key} and d.data is null))`
}

/**
 * Appends `rows` to the change log with revisions `base + 1`, `base + 2`, … in
 * order, each pointing at its record's previous change (read before the flags
 * table is updated, so the pointer is the state before this write).
 */
export async function appendChanges(
  trx: Knex.Transaction,
  dialect: Dialect,
  rows: readonly ChangeRow[],
  base: number,
  now: number,
  audit: AuditContext = {},
): Promise<void> {
  if (rows.some((r) => r.audit)) return appendChangesWithOwnAudit(trx, dialect, rows, base, now, audit)
  // The audit context is the same for every row of a write: bound once, not per row.
  const who = whoOf(audit)
  if (dialect === 'postgres') {
    await trx.raw(
      `insert into "flagsync_changes"
         (revision, scope, key, data, created_at, actor, declared_actor, source, batch_id, op_index, prev_revision)
       select ?::bigint + c.n, c.scope, c.key, c.data, ?::bigint, ?, ?, ?, ?, c.op, ${headOf('c.scope', 'c.key')}
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
  // Each row's values are bound separately: SQLite reads bound strings as they are, whereas one JSON array
  // of the rows made each flag's JSON escaped (in JS) and unescaped (by json_each) once more. The row's
  // ordinal is a literal from our own loop, so the SQL depends on the row count only, never on the data.
  for (let start = 0; start < rows.length; start += SQLITE_ROWS_PER_INSERT) {
    const end = Math.min(rows.length, start + SQLITE_ROWS_PER_INSERT)
    const bindings: Knex.RawBinding[] = [base, now, ...who]
    const values: string[] = []
    for (let i = start; i < end; i++) {
      const r = rows[i] as ChangeRow
      values.push(`(${i + 1},?,?,?,?)`)
      bindings.push(r.scope, r.key, r.json, r.opIndex)
    }
    await sqliteRun(
      trx,
      `insert into "flagsync_changes"
         (revision, scope, key, data, created_at, actor, declared_actor, source, batch_id, op_index, prev_revision)
       select ? + v.column1, v.column2, v.column3, v.column4, ?, ?, ?, ?, ?, v.column5,
         ${headOf('v.column2', 'v.column3')}
       from (values ${values.join(',')}) v`,
      bindings,
    )
  }
}

/** Rows per change-log insert on SQLite: 4 variables each (plus 6) stays far under its 32 766-variable limit. */
const SQLITE_ROWS_PER_INSERT = 4000

/** The change-log columns `actor, declared_actor, source, batch_id` of an audit context. */
const whoOf = (audit: AuditContext) => [
  audit.actor ?? null,
  audit.declaredActor ?? null,
  audit.source ?? null,
  audit.batchId ?? null,
]

/**
 * `appendChanges` for a write where some changes have their own audit context: each row's audit columns are bound
 * with it (its own context, else the write's), still one statement for all rows. A write without any keeps
 * binding the context once.
 */
async function appendChangesWithOwnAudit(
  trx: Knex.Transaction,
  dialect: Dialect,
  rows: readonly ChangeRow[],
  base: number,
  now: number,
  audit: AuditContext,
): Promise<void> {
  const who = rows.map((r) => whoOf(r.audit ?? audit))
  if (dialect === 'postgres') {
    await trx.raw(
      `insert into "flagsync_changes"
         (revision, scope, key, data, created_at, actor, declared_actor, source, batch_id, op_index, prev_revision)
       select ?::bigint + c.n, c.scope, c.key, c.data, ?::bigint, c.actor, c.declared, c.source, c.batch, c.op,
         ${headOf('c.scope', 'c.key')}
       from unnest(?::text[], ?::text[], ?::text[], ?::int[], ?::text[], ?::text[], ?::text[], ?::text[])
         with ordinality as c(scope, key, data, op, actor, declared, source, batch, n)`,
      [
        base,
        now,
        rows.map((r) => r.scope),
        rows.map((r) => r.key),
        rows.map((r) => r.json),
        rows.map((r) => r.opIndex),
        ...[0, 1, 2, 3].map((column) => who.map((w) => w[column] ?? null)),
      ] as Knex.RawBinding[],
    )
    return
  }
  for (let start = 0; start < rows.length; start += SQLITE_OWN_AUDIT_ROWS_PER_INSERT) {
    const end = Math.min(rows.length, start + SQLITE_OWN_AUDIT_ROWS_PER_INSERT)
    const bindings: Knex.RawBinding[] = [base, now]
    const values: string[] = []
    for (let i = start; i < end; i++) {
      const r = rows[i] as ChangeRow
      values.push(`(${i + 1},?,?,?,?,?,?,?,?)`)
      bindings.push(r.scope, r.key, r.json, r.opIndex, ...(who[i] ?? []))
    }
    await sqliteRun(
      trx,
      `insert into "flagsync_changes"
         (revision, scope, key, data, created_at, actor, declared_actor, source, batch_id, op_index, prev_revision)
       select ? + v.column1, v.column2, v.column3, v.column4, ?, v.column6, v.column7, v.column8, v.column9, v.column5,
         ${headOf('v.column2', 'v.column3')}
       from (values ${values.join(',')}) v`,
      bindings,
    )
  }
}

/** Rows per change-log insert with audit columns on SQLite: 8 variables each (plus 2), under 32 766. */
const SQLITE_OWN_AUDIT_ROWS_PER_INSERT = 4000

/**
 * Points the heads at the change-log entries after `base`: upserts the changed
 * records' revisions and, when `deletes`, removes the deleted ones. A head is a
 * revision only, so each flag's JSON is written once (in its log row).
 */
export async function pointHeadsAtChanges(
  trx: Knex.Transaction,
  dialect: Dialect,
  base: number,
  deletes: boolean,
): Promise<void> {
  if (dialect === 'sqlite') await sqliteRun(trx, UPSERT_HEADS, [base])
  else await trx.raw(UPSERT_HEADS, [base])
  if (!deletes) return
  if (dialect === 'sqlite') await sqliteRun(trx, DELETE_HEADS, [base])
  else await trx.raw(DELETE_HEADS, [base])
}

const UPSERT_HEADS = `insert into "flagsync_heads" (scope, key, revision)
  select scope, key, revision from "flagsync_changes" where revision > ? and data is not null
  on conflict (scope, key) do update set revision = excluded.revision`

const DELETE_HEADS = `delete from "flagsync_heads"
  where (scope, key) in (select scope, key from "flagsync_changes" where revision > ? and data is null)`

/** The stored JSON and revision of those of `keys` that exist in `scope` (the flags view: each head's log row). */
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
 * For each `[key, oldest, newest]`, the revisions of the key's change-log rows at or before `newest`, walking its
 * chain back from its newest row to the first row at or before `oldest` (or to the chain's start, or to a row pruning
 * removed), with the revision of that newest row (`head`): one statement for any number of keys, one primary-key
 * seek per row, revisions only (no JSON); rows above `newest` answer no pair and stay in the database. Each step is a
 * scalar subquery, so PostgreSQL seeks each row by its key instead of hashing the whole log once per step. A step's
 * `next` is the row's previous revision: 0 at the chain's start, -1 when the row itself is gone (left out). A walk
 * stops after `maxSteps` rows; a key's row with `cut` 1 says its walk stopped there short of `oldest`.
 */
export async function walkChains(
  q: Knex | Knex.Transaction,
  dialect: Dialect,
  scope: string,
  targets: ReadonlyArray<readonly [key: string, oldest: number, newest: number]>,
  maxSteps = 2 ** 31 - 1,
): Promise<Array<{ key: string; revision: number | string; head: number | string; cut: number | string | boolean }>> {
  const bindings =
    dialect === 'postgres'
      ? [targets.map((t) => t[0]), targets.map((t) => t[1]), targets.map((t) => t[2])]
      : [JSON.stringify(targets)]
  const all = [scope, scope, ...bindings, maxSteps, maxSteps] as Knex.RawBinding[]
  return rowsOf(await q.raw(WALK_CHAINS[dialect], all))
}

/** A walk step: the row's previous revision (0: none), -1 when the row `revision` is not in the log. */
const nextOf = (revision: string) =>
  `coalesce((select coalesce(c.prev_revision, 0) from "flagsync_changes" c where c.revision = ${revision}), -1)`

const walkSql = (targets: string) => `with recursive t(key, oldest, newest, head) as (${targets}),
  walk(key, oldest, newest, head, revision, next, step) as (
    select t.key, t.oldest, t.newest, t.head, t.head, ${nextOf('t.head')}, 1 from t where t.head is not null
    union all
    select w.key, w.oldest, w.newest, w.head, w.next, ${nextOf('w.next')}, w.step + 1 from walk w
    where w.next > 0 and w.revision > w.oldest and w.step < ?
  ),
  marked(key, revision, head, newest, next, cut) as (
    select key, revision, head, newest, next,
      case when step >= ? and next > 0 and revision > oldest then 1 else 0 end from walk
  )
  select key, revision, head, cut from marked where next >= 0 and (revision <= newest or cut = 1)`

const WALK_CHAINS: Record<Dialect, string> = {
  postgres: walkSql(
    `select u.key, u.oldest, u.newest, ${headOf('?', 'u.key')} from unnest(?::text[], ?::bigint[], ?::bigint[]) as u(key, oldest, newest)`,
  ),
  sqlite: walkSql(`select value ->> 0, value ->> 1, value ->> 2, ${headOf('?', 'value ->> 0')} from json_each(?)`),
}

/** The JSON (null: a delete) of the change-log rows with these revisions; one statement. */
export async function selectChangeData(
  q: Knex | Knex.Transaction,
  dialect: Dialect,
  revisions: readonly number[],
): Promise<Array<{ revision: number | string; data: string | null }>> {
  const list = dialect === 'postgres' ? [...revisions] : JSON.stringify(revisions)
  return rowsOf(await q.raw(CHANGE_DATA[dialect], [list] as Knex.RawBinding[]))
}

const CHANGE_DATA: Record<Dialect, string> = {
  postgres: `select revision, data from "flagsync_changes" where revision = any(?::bigint[])`,
  sqlite: `select revision, data from "flagsync_changes" where revision in (select value from json_each(?))`,
}

export async function readMeta(trx: Knex | Knex.Transaction, name: string): Promise<number> {
  const row = (await trx('flagsync_meta').where('name', name).first('value')) as { value: number | string } | undefined
  return Number(row?.value ?? 0)
}
