import type { Knex } from 'knex'
import { FlagWriter, type StagedChange } from './flag-writer.js'
import { TABLES } from './migrations.js'
import type { Database } from './open-database.js'
import { appendChanges, applyChangesToFlags, lockRevision, setRevision } from './statements.js'
import { isDatabaseFailure, toStoreError } from './store-error.js'
import type { FlagChange, StoredFlag, StoredFlagRow } from './types.js'

export const NOTIFY_CHANNEL = 'flagsync_changes'

export interface FlagStoreOptions {
  /** Runs inside every write transaction just before it commits; tests use it to inject faults. */
  beforeCommit?: (trx: Knex.Transaction) => void | Promise<void>
  clock?: () => number
}

export interface WriteResult<T> {
  result: T
  changes: FlagChange[]
}

/**
 * Flags with a change log. Every write transaction first takes the revision
 * row's lock, so writers (threads, processes, instances) commit one at a time
 * and revisions become visible in order: a follower reading `revision > n`
 * never skips one that commits late.
 */
export class FlagStore {
  readonly db: Database
  private readonly options: FlagStoreOptions

  constructor(db: Database, options: FlagStoreOptions = {}) {
    this.db = db
    this.options = options
  }

  private now(): number {
    return (this.options.clock ?? Date.now)()
  }

  /**
   * Runs `fn` in one transaction. Errors thrown by `fn` roll back and pass
   * through unchanged; database failures (also those of queries `fn` ran on
   * the transaction itself) become StoreErrors.
   */
  async write<T>(fn: (writer: FlagWriter) => Promise<T>, scope = ''): Promise<WriteResult<T>> {
    let fnError: { error: unknown } | undefined
    try {
      return await this.db.knex.transaction(async (trx) => {
        // A writer stuck behind a held lock answers 503 after a bounded wait instead of hanging.
        if (this.db.config.dialect === 'postgres') await trx.raw(`set local lock_timeout = '5s'`)
        // The lock first: SQLite cannot upgrade a read lock to a write lock
        // while another process writes, so taking it late would fail with BUSY.
        const base = await lockRevision(trx)
        const writer = new FlagWriter(trx, scope, this.db.config.dialect)
        let result: T
        try {
          result = await fn(writer)
        } catch (error) {
          fnError = { error }
          throw error
        }
        const changes = await this.flush(trx, base, await writer.changes())
        await this.options.beforeCommit?.(trx)
        return { result, changes }
      })
    } catch (error) {
      if (fnError && fnError.error === error && !isDatabaseFailure(error)) throw error
      throw toStoreError(error)
    }
  }

  /**
   * Commits the staged changes: the change log first, then the flags table
   * follows from it inside the database, then the revision; a handful of
   * statements whatever the number of changes.
   */
  private async flush(trx: Knex.Transaction, base: number, staged: StagedChange[]): Promise<FlagChange[]> {
    if (staged.length === 0) return []
    const changes: FlagChange[] = staged.map((c, i) => ({
      revision: base + i + 1,
      scope: c.scope,
      key: c.key,
      flag: c.flag,
      // Serialized once: the same string is stored and streamed.
      json: c.flag ? JSON.stringify(c.flag) : null,
    }))
    const { dialect } = this.db.config
    await appendChanges(trx, dialect, changes, base, this.now())
    await applyChangesToFlags(
      trx,
      base,
      changes.some((c) => c.json === null),
    )
    const last = base + changes.length
    await setRevision(trx, last)
    if (dialect === 'postgres') {
      // Delivered on commit only, so listeners never see uncommitted revisions.
      await trx.raw('select pg_notify(?, ?)', [NOTIFY_CHANNEL, String(last)])
    }
    return changes
  }

  /** Every flag (optionally of one scope) with the revision they are consistent with. */
  async loadAll(scope?: string): Promise<{ revision: number; rows: StoredFlagRow[] }> {
    try {
      return await this.db.knex.transaction(
        async (trx) => {
          const meta = await trx(TABLES.meta).where('name', 'revision').first('value')
          const query = trx(TABLES.flags).select('scope', 'key', 'data', 'revision').orderBy(['scope', 'key'])
          if (scope !== undefined) query.where('scope', scope)
          const rows = (await query) as Array<{ scope: string; key: string; data: string; revision: number | string }>
          return {
            revision: Number(meta?.value ?? 0),
            rows: rows.map((r) => ({
              scope: r.scope,
              key: r.key,
              json: r.data,
              flag: JSON.parse(r.data) as StoredFlag,
              revision: Number(r.revision),
            })),
          }
        },
        { readOnly: this.db.config.dialect === 'postgres' },
      )
    } catch (error) {
      throw toStoreError(error)
    }
  }

  async get(key: string, scope = ''): Promise<StoredFlag | undefined> {
    try {
      const row = await this.db.knex(TABLES.flags).where({ scope, key }).first('data')
      return row ? (JSON.parse(row.data) as StoredFlag) : undefined
    } catch (error) {
      throw toStoreError(error)
    }
  }

  /** Changes after `revision`, oldest first. */
  async changesSince(revision: number, limit = 1000): Promise<FlagChange[]> {
    try {
      const rows = (await this.db
        .knex(TABLES.changes)
        .where('revision', '>', revision)
        .orderBy('revision')
        .limit(limit)
        .select('revision', 'scope', 'key', 'data')) as Array<{
        revision: number | string
        scope: string
        key: string
        data: string | null
      }>
      return rows.map((r) => ({
        revision: Number(r.revision),
        scope: r.scope,
        key: r.key,
        json: r.data,
        flag: r.data === null ? null : (JSON.parse(r.data) as StoredFlag),
      }))
    } catch (error) {
      throw toStoreError(error)
    }
  }

  /** The oldest revision still in the log (0 when empty); a follower behind it must reload. */
  async oldestRevision(): Promise<number> {
    const row = await this.db.knex(TABLES.changes).min({ min: 'revision' }).first()
    return Number(row?.min ?? 0)
  }

  /** Drops change-log entries older than `maxAgeMs`, always keeping the newest `keepLast`. */
  async pruneChanges(maxAgeMs: number, keepLast = 1000): Promise<number> {
    const meta = await this.db.knex(TABLES.meta).where('name', 'revision').first('value')
    const floor = Number(meta?.value ?? 0) - keepLast
    return this.db
      .knex(TABLES.changes)
      .where('created_at', '<', this.now() - maxAgeMs)
      .andWhere('revision', '<=', floor)
      .delete()
  }
}
