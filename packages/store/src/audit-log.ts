import type { Knex } from 'knex'
import { META, TABLES } from './migrations.js'
import type { Database } from './open-database.js'
import { readMeta } from './statements.js'
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
  /** Page size (default 100). */
  limit?: number
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

/**
 * Reads the audit trail, newest first, one page at a time. The previous
 * state of each entry comes from the log itself (the record's previous row,
 * found through the scope/key/revision index), so writing a change stores
 * no "before" copy.
 */
export class AuditLog {
  private readonly db: Database

  constructor(db: Database) {
    this.db = db
  }

  /** A record's entries, deletes included. */
  history(key: string, query: AuditQuery = {}): Promise<AuditPage> {
    return this.page(query, (q) => q.andWhere('c.key', key))
  }

  /** Every record's entries, deleted records included. */
  changes(query: AuditQuery = {}): Promise<AuditPage> {
    return this.page(query, (q) => q)
  }

  private async page(query: AuditQuery, narrow: (q: Knex.QueryBuilder) => Knex.QueryBuilder): Promise<AuditPage> {
    const { knex } = this.db
    const limit = query.limit ?? 100
    try {
      const [prunedThrough, prefixPruned] = await Promise.all([
        readMeta(knex, META.prunedThrough),
        readMeta(knex, META.prefixPrunedThrough),
      ])
      const previous = (column: string) =>
        knex
          .select(`p.${column}`)
          .from({ p: TABLES.changes })
          .whereRaw('p.scope = c.scope and p.key = c.key and p.revision < c.revision')
          .orderBy('p.revision', 'desc')
          .limit(1)
      const q = knex
        .select(
          'c.revision',
          'c.scope',
          'c.key',
          'c.data',
          'c.created_at',
          'c.actor',
          'c.declared_actor',
          'c.source',
          'c.batch_id',
          'c.op_index',
          previous('data').as('before_data'),
          previous('revision').as('before_revision'),
        )
        .from({ c: TABLES.changes })
      if (query.scopes) q.whereIn('c.scope', [...query.scopes])
      else q.where('c.scope', query.scope ?? '')
      if (query.since !== undefined) q.andWhere('c.revision', '>', query.since)
      if (query.cursor !== undefined) q.andWhere('c.revision', '<', query.cursor)
      // One more than asked tells whether another page exists without a count.
      const rows = (await narrow(q)
        .orderBy('c.revision', 'desc')
        .limit(limit + 1)) as AuditRow[]
      const more = rows.length > limit
      const entries = rows.slice(0, limit).map((row) => toEntry(row, prunedThrough, prefixPruned))
      const last = entries[entries.length - 1]
      return { entries, nextCursor: more && last ? last.revision : null }
    } catch (error) {
      throw toStoreError(error)
    }
  }
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
export function changedFields(before: StoredFlag | null, after: StoredFlag | null): string[] {
  const names = new Set([...Object.keys(before ?? {}), ...Object.keys(after ?? {})])
  return [...names].filter((name) => JSON.stringify(before?.[name]) !== JSON.stringify(after?.[name]))
}
