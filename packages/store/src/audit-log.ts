import { AUDIT_PAGE_SIZE } from '@flagsync/protocol'
import type { Knex } from 'knex'
import { META, TABLES } from './migrations.js'
import type { Database } from './open-database.js'
import { headOf, readMeta, rowsOf } from './statements.js'
import { toStoreError } from './store-error.js'
import type { StoredFlag } from './types.js'

/** One applied change as the audit trail tells it: a change-log row with its audit columns. */
export interface AuditEntry {
  revision: number
  /** Commit time, ms since the epoch. */
  time: number
  scope: string
  key: string
  action: 'create' | 'update' | 'delete'
  /** The record before the change (null: it did not exist); meaningless unless `beforeKnown`. */
  before: StoredFlag | null
  /** False when the previous state was pruned (the entry is older than the kept part of the log). */
  beforeKnown: boolean
  /** The record after the change; null for a delete. */
  after: StoredFlag | null
  /** Top-level fields whose value differs between before and after (every field when before is unknown). */
  changedFields: string[]
  actor: string | null
  declaredActor: string | null
  source: string | null
  batchId: string | null
  operationIndex: number | null
}

export interface AuditPage {
  entries: AuditEntry[]
  /** Pass as `cursor` for the next (older) page; null on the last page. */
  nextCursor: number | null
}

export interface AuditQuery {
  scope?: string
  /** Several scopes at once (e.g. every environment of a project), merged newest first; wins over `scope`. */
  scopes?: readonly string[]
  /** Only entries with a revision above this one. */
  since?: number
  /** Only entries with a revision below this one (the previous page's `nextCursor`). */
  cursor?: number
  /** Page size (default `AUDIT_PAGE_SIZE`, 100). */
  limit?: number
}

/** What `changes` may narrow a page to, besides its scopes and revisions; every condition applies in SQL. */
export interface AuditFilter {
  /** Only these records' entries. */
  keys?: readonly string[]
  /** Only entries committed at or after this time (ms since the epoch). */
  from?: number
  /** Only entries committed before this time (ms since the epoch). */
  to?: number
  /**
   * One more condition on the change row, aliased `c` (its columns `c.actor`, `c.source`, …): an application
   * narrows by what only its own tables know, e.g. the entries a person's requests caused.
   */
  where?: (query: Knex.QueryBuilder) => void
}

interface AuditRow {
  revision: number | string
  scope: string
  key: string
  data: string | null
  created_at: number | string
  actor: string | null
  declared_actor: string | null
  source: string | null
  batch_id: string | null
  op_index: number | string | null
  before_data: string | null
  before_revision: number | string | null
}

/** The columns of an entry and of the change before it (the row its `prev_revision` points at). */
const ENTRY_COLUMNS = `c.revision, c.scope, c.key, c.data, c.created_at, c.actor, c.declared_actor, c.source,
  c.batch_id, c.op_index, p.data as before_data, p.revision as before_revision`

/**
 * Reads the audit trail, newest first, one page at a time. Each change-log row
 * points at its record's previous row, so an entry's previous state is one
 * primary-key seek and writing a change stores no "before" copy; a record's
 * history is that chain walked back from its newest row.
 */
export class AuditLog {
  private readonly db: Database

  constructor(db: Database) {
    this.db = db
  }

  /** A record's entries, deletes included. */
  async history(key: string, query: AuditQuery = {}): Promise<AuditPage> {
    const limit = query.limit ?? AUDIT_PAGE_SIZE
    try {
      const pruned = await this.pruneMarks()
      const scopes = query.scopes ? [...new Set(query.scopes)] : [query.scope ?? '']
      const rows: AuditRow[] = []
      for (const scope of scopes) rows.push(...(await this.chain(scope, key, query, limit + 1)))
      rows.sort((a, b) => Number(b.revision) - Number(a.revision))
      return toPage(rows, limit, pruned)
    } catch (error) {
      throw toStoreError(error)
    }
  }

  /** Every record's entries, deleted records included; `filter` narrows them (see `AuditFilter`). */
  async changes(query: AuditQuery & AuditFilter = {}): Promise<AuditPage> {
    const limit = query.limit ?? AUDIT_PAGE_SIZE
    try {
      const pruned = await this.pruneMarks()
      // One query per scope, each reading its newest rows in index order, merged here: a single
      // `scope in (…) order by revision` would read and sort every row of those scopes.
      const scopes = query.scopes ? [...new Set(query.scopes)] : [query.scope ?? '']
      const rows: AuditRow[] = []
      for (const scope of scopes) rows.push(...(await this.scopePage(scope, query, limit + 1)))
      rows.sort((a, b) => Number(b.revision) - Number(a.revision))
      return toPage(rows, limit, pruned)
    } catch (error) {
      throw toStoreError(error)
    }
  }

  /** Up to `count` rows of one scope, newest first, below `cursor` and above `since`. */
  private async scopePage(scope: string, query: AuditQuery & AuditFilter, count: number): Promise<AuditRow[]> {
    const { knex } = this.db
    const q = knex
      .select(knex.raw(ENTRY_COLUMNS))
      .from({ c: TABLES.changes })
      .leftJoin({ p: TABLES.changes }, 'p.revision', 'c.prev_revision')
      .where('c.scope', scope)
    if (query.since !== undefined) q.andWhere('c.revision', '>', query.since)
    if (query.cursor !== undefined) q.andWhere('c.revision', '<', query.cursor)
    if (query.keys !== undefined) q.whereIn('c.key', [...query.keys])
    if (query.from !== undefined) q.andWhere('c.created_at', '>=', query.from)
    if (query.to !== undefined) q.andWhere('c.created_at', '<', query.to)
    if (query.where) q.andWhere(query.where)
    // One more than asked tells whether another page exists without a count.
    return (await q.orderBy('c.revision', 'desc').limit(count)) as AuditRow[]
  }

  private async pruneMarks(): Promise<PruneMarks> {
    const { knex } = this.db
    const [prunedThrough, prefixPruned] = await Promise.all([
      readMeta(knex, META.prunedThrough),
      readMeta(knex, META.prefixPrunedThrough),
    ])
    return { prunedThrough, prefixPruned }
  }

  /** Up to `count` rows of one record, newest first, below `cursor` and above `since`. */
  private async chain(scope: string, key: string, query: AuditQuery, count: number): Promise<AuditRow[]> {
    const { knex } = this.db
    const start = await this.newestBelow(scope, key, query.cursor)
    if (start === null) return []
    const since = query.since ?? -1
    const result = await knex.raw(
      `with recursive walk(revision, prev, depth) as (
         select c.revision, c.prev_revision, 1 from "flagsync_changes" c
         where c.revision = ? and c.scope = ? and c.key = ?
         union all
         select c.revision, c.prev_revision, w.depth + 1
         from walk w join "flagsync_changes" c on c.revision = w.prev
         where w.depth < ? and c.revision > ?
       )
       select ${ENTRY_COLUMNS}
       from walk w join "flagsync_changes" c on c.revision = w.revision
       left join "flagsync_changes" p on p.revision = c.prev_revision
       where c.revision > ?
       order by c.revision desc`,
      [start, scope, key, count, since, since],
    )
    return Array.isArray(result) ? (result as AuditRow[]) : (result as { rows: AuditRow[] }).rows
  }

  /**
   * The revision of the record's newest row below `cursor` (its newest row
   * without one). A cursor is normally the previous page's last entry, so its
   * own row points there; any other revision walks the chain down to it.
   */
  private async newestBelow(scope: string, key: string, cursor: number | undefined): Promise<number | null> {
    const { knex } = this.db
    const headRows = rowsOf<{ head: number | string | null }>(
      await knex.raw(`select ${headOf('?', '?')} as head`, [scope, key, scope, key]),
    )
    const head = headRows[0]?.head ?? null
    if (head === null) return null
    if (cursor === undefined || Number(head) < cursor) return Number(head)
    const at = (await knex(TABLES.changes).where({ revision: cursor, scope, key }).first('prev_revision')) as
      | { prev_revision: number | string | null }
      | undefined
    if (at) return at.prev_revision === null ? null : Number(at.prev_revision)
    const below = rowsOf<{ revision: number | string | null }>(
      await knex.raw(
        `with recursive walk(revision, prev) as (
           select c.revision, c.prev_revision from "flagsync_changes" c where c.revision = ?
           union all
           select c.revision, c.prev_revision from walk w join "flagsync_changes" c on c.revision = w.prev
           where w.revision >= ?
         )
         select max(revision) as revision from walk where revision < ?`,
        [Number(head), cursor, cursor],
      ),
    )
    const revision = below[0]?.revision ?? null
    return revision === null ? null : Number(revision)
  }
}

interface PruneMarks {
  prunedThrough: number
  prefixPruned: number
}

function toPage(rows: AuditRow[], limit: number, { prunedThrough, prefixPruned }: PruneMarks): AuditPage {
  const more = rows.length > limit
  const entries = rows.slice(0, limit).map((row) => toEntry(row, prunedThrough, prefixPruned))
  const last = entries[entries.length - 1]
  return { entries, nextCursor: more && last ? last.revision : null }
}

function toEntry(row: AuditRow, prunedThrough: number, prefixPruned: number): AuditEntry {
  const revision = Number(row.revision)
  const after = row.data === null ? null : (JSON.parse(row.data) as StoredFlag)
  const found = row.before_revision !== null
  // The same rule as a base-revision lookup: see FlagWriter.statesAt.
  const beforeKnown = found || (revision - 1 >= prunedThrough && prefixPruned === 0)
  const before = beforeKnown && row.before_data !== null ? (JSON.parse(row.before_data) as StoredFlag) : null
  return {
    revision,
    time: Number(row.created_at),
    scope: row.scope,
    key: row.key,
    action: after === null ? 'delete' : before === null && beforeKnown ? 'create' : 'update',
    before,
    beforeKnown,
    after,
    changedFields: beforeKnown ? changedFields(before, after) : Object.keys(after ?? {}),
    actor: row.actor,
    declaredActor: row.declared_actor,
    source: row.source,
    batchId: row.batch_id,
    operationIndex: row.op_index === null ? null : Number(row.op_index),
  }
}

/** Top-level fields that differ; values are compared as JSON (flags are JSON values). */
function changedFields(before: StoredFlag | null, after: StoredFlag | null): string[] {
  const names = new Set([...Object.keys(before ?? {}), ...Object.keys(after ?? {})])
  return [...names].filter((name) => JSON.stringify(before?.[name]) !== JSON.stringify(after?.[name]))
}
