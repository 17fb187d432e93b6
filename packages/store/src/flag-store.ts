import type { Knex } from 'knex'
import { type BaseStates, type RevisionPair, readStatesAt } from './base-states.js'
import { FlagWriter, type StagedChange } from './flag-writer.js'
import { META, TABLES } from './migrations.js'
import type { Database } from './open-database.js'
import { appendChanges, lockRevision, pointHeadsAtChanges, readMeta, setRevision } from './statements.js'
import { isDatabaseFailure, toStoreError } from './store-error.js'
import type { AuditContext, FlagChange, StoredFlag, StoredFlagRow } from './types.js'

export const NOTIFY_CHANNEL = 'flagsync_changes'

export interface FlagStoreOptions {
  /**
   * Runs inside every write transaction just before it commits, with the write's changes and audit context (a
   * change with its own carries it as `audit`): what it writes commits with them or not at all (the flag
   * service's webhook outbox); tests inject faults.
   */
  beforeCommit?: (trx: Knex.Transaction, changes: FlagChange[], audit?: AuditContext) => void | Promise<void>
  clock?: () => number
}

export interface WriteOptions {
  /** States read before the lock (`readStatesAt`): `statesAt` answers them without a query. */
  baseStates?: readonly BaseStates[]
  /**
   * Bounded change-log reads under the lock: `statesAt` walks at most `MAX_STEPS_UNDER_LOCK` rows
   * per record, and when that leaves a record short of its base it throws `BaseStatesNeeded` (the
   * write rolls back) so the caller reads them outside the lock and writes again with `baseStates`.
   */
  deferBaseStates?: boolean
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
  async write<T>(
    fn: (writer: FlagWriter) => Promise<T>,
    scope = '',
    audit?: AuditContext,
    options: WriteOptions = {},
  ): Promise<WriteResult<T>> {
    let fnError: { error: unknown } | undefined
    try {
      return await this.db.knex.transaction(async (trx) => {
        // A writer stuck behind a held lock answers 503 after a bounded wait instead of hanging.
        if (this.db.config.dialect === 'postgres') await trx.raw(`set local lock_timeout = '5s'`)
        // The lock first: SQLite cannot upgrade a read lock to a write lock
        // while another process writes, so taking it late would fail with BUSY.
        const base = await lockRevision(trx, this.db.config.dialect)
        const writer = new FlagWriter(trx, scope, this.db.config.dialect, base, options.deferBaseStates)
        for (const states of options.baseStates ?? []) writer.adopt(states)
        let result: T
        try {
          result = await fn(writer)
        } catch (error) {
          fnError = { error }
          throw error
        }
        const changes = await this.flush(trx, base, await writer.changes(), audit)
        await this.options.beforeCommit?.(trx, changes, audit)
        return { result, changes }
      })
    } catch (error) {
      if (fnError && fnError.error === error && !isDatabaseFailure(error)) throw error
      throw toStoreError(error)
    }
  }

  /**
   * Commits the staged changes: the change log first (the only copy of each
   * flag's JSON), then the heads point at it inside the database, then the
   * revision; a handful of statements whatever the number of changes.
   */
  private async flush(
    trx: Knex.Transaction,
    base: number,
    staged: StagedChange[],
    audit: AuditContext | undefined,
  ): Promise<FlagChange[]> {
    if (staged.length === 0) return []
    const changes: FlagChange[] = staged.map((c, i) => ({
      revision: base + i + 1,
      scope: c.scope,
      key: c.key,
      flag: c.flag,
      // Serialized once: the same string is stored and streamed.
      json: c.flag ? JSON.stringify(c.flag) : null,
      ...(c.audit ? { audit: c.audit } : {}),
    }))
    const { dialect } = this.db.config
    await appendChanges(
      trx,
      dialect,
      changes.map((c, i) => ({
        scope: c.scope,
        key: c.key,
        json: c.json,
        opIndex: staged[i]?.opIndex ?? null,
        audit: c.audit,
      })),
      base,
      this.now(),
      audit,
    )
    await pointHeadsAtChanges(
      trx,
      dialect,
      base,
      changes.some((c) => c.json === null),
    )
    const last = base + changes.length
    await setRevision(trx, dialect, last)
    if (dialect === 'postgres') {
      // Delivered on commit only, so listeners never see uncommitted revisions.
      await trx.raw('select pg_notify(?, ?)', [NOTIFY_CHANNEL, String(last)])
    }
    return changes
  }

  /**
   * Each pair's state at its revision (see `FlagWriter.statesAt`), read outside any write: one
   * read-only snapshot, no lock taken, so other writers go on meanwhile. Only revisions the store
   * had issued are answered (their states never change), and records unchanged since are left
   * to the write (they are the records it loads); a write adopts the result (`baseStates`).
   */
  async readStatesAt(pairs: ReadonlyArray<RevisionPair>, scope = ''): Promise<BaseStates> {
    const { dialect } = this.db.config
    try {
      return await this.db.knex.transaction(
        async (trx) => {
          const read = await readStatesAt(trx, dialect, scope, pairs, { skipUnchanged: true, issuedOnly: true })
          return { scope, ...read }
        },
        // One snapshot for the marks, the walk and the JSON (SQLite's read transaction is one already).
        dialect === 'postgres' ? { readOnly: true, isolationLevel: 'repeatable read' } : {},
      )
    } catch (error) {
      throw toStoreError(error)
    }
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

  /** Every change after this revision is in the log; a follower at an older revision must reload. */
  async prunedThrough(): Promise<number> {
    return readMeta(this.db.knex, META.prunedThrough)
  }

  /**
   * Drops change-log entries older than `maxAgeMs`, always keeping the newest
   * `keepLast`: the whole prefix, also deleted records' last rows, so conflict
   * checks against older base revisions become record-level. A live record's
   * newest row holds its current JSON and is always kept. The flat API prunes
   * with `pruneHistory` instead.
   */
  async pruneChanges(maxAgeMs: number, keepLast = 1000): Promise<number> {
    return this.prune(maxAgeMs, keepLast, 'prefix')
  }

  /**
   * Drops change-log entries (and so audit entries) older than `maxAgeMs`,
   * always keeping the newest `keepLast`, except each record's latest state:
   * a row stays until a newer row of the same record is old enough too, so
   * the log keeps telling any record's state at every revision after the
   * pruned one (what conflict checks need), and deleted records are forgotten.
   */
  async pruneHistory(maxAgeMs: number, keepLast = 1000): Promise<number> {
    return this.prune(maxAgeMs, keepLast, 'superseded')
  }

  private async prune(maxAgeMs: number, keepLast: number, mode: 'prefix' | 'superseded'): Promise<number> {
    try {
      return await this.db.knex.transaction(async (trx) => {
        // Serialized with writers: the cutoff and the meta rows cannot race a commit.
        const current = await lockRevision(trx, this.db.config.dialect)
        const old = (await trx(TABLES.changes)
          .where('created_at', '<', this.now() - maxAgeMs)
          .max({ max: 'revision' })
          .first()) as { max: number | string | null } | undefined
        const cutoff = Math.min(Number(old?.max ?? 0), current - keepLast)
        if (cutoff <= 0) return 0
        // A live record's newest row is its stored state (the flags view reads it): never pruned.
        const query = trx(TABLES.changes)
          .where('revision', '<=', cutoff)
          .whereNotIn('revision', trx(TABLES.heads).select('revision'))
        if (mode === 'superseded') {
          // A row is superseded when its record's next change (the row pointing back at it) is old enough too.
          query.andWhere((q) => {
            q.whereNull('data').orWhereIn(
              'revision',
              trx(TABLES.changes).select('prev_revision').where('revision', '<=', cutoff).whereNotNull('prev_revision'),
            )
          })
        }
        const dropped = await query.delete()
        if (dropped > 0) {
          await raiseMeta(trx, META.prunedThrough, cutoff)
          if (mode === 'prefix') await raiseMeta(trx, META.prefixPrunedThrough, cutoff)
        }
        return dropped
      })
    } catch (error) {
      throw toStoreError(error)
    }
  }
}

async function raiseMeta(trx: Knex.Transaction, name: string, value: number): Promise<void> {
  await trx(TABLES.meta).where('name', name).andWhere('value', '<', value).update({ value })
}
