import { jsonEqual } from '@flagsync/protocol'
import type { Knex } from 'knex'
import { type BaseStates, BaseStatesNeeded, pairId, type RevisionPair, readStatesAt } from './base-states.js'
import type { DatabaseConfig } from './database-url.js'
import { selectFlags } from './statements.js'
import { toStoreError } from './store-error.js'
import type { AuditContext, StateAt, StoredFlag } from './types.js'

/** A flag staged for commit: null means deleted. */
export interface StagedChange {
  scope: string
  key: string
  flag: StoredFlag | null
  /** Whether the row existed before this transaction; undefined until looked up. */
  existed: boolean | undefined
  /** The batch operation that staged it last (audit trail); null outside batches. */
  opIndex: number | null
  /** The audit context it was staged under last (`withAudit`); undefined: the write's. */
  audit: AuditContext | undefined
}

/** A record as committed before this transaction began. */
export interface CommittedFlag {
  flag: StoredFlag | null
  /** The change-log revision of its last change; null when it does not exist. */
  revision: number | null
}

const idOf = (scope: string, key: string) => `${scope}\u0000${key}`

/**
 * Change-log rows a deferred write (`WriteOptions.deferBaseStates`) walks per record under the
 * lock: a record changed fewer times than this since its base is checked in the same pass.
 */
export const MAX_STEPS_UNDER_LOCK = 4

/**
 * The write side of one transaction. Reads go to the database once per key
 * (batched by `load`), writes are staged in memory and flushed at commit
 * with one statement per step, so a 500-operation batch costs a handful of queries.
 */
export class FlagWriter {
  readonly trx: Knex.Transaction
  readonly scope: string
  private readonly dialect: DatabaseConfig['dialect']
  private readonly original = new Map<string, StoredFlag | null>()
  private readonly originalRevision = new Map<string, number>()
  private readonly staged = new Map<string, StagedChange>()
  private readonly states = new Map<string, StateAt>()
  /** See `storeRevision`: the revision the write lock read (`lockRevision`), so no query of its own. */
  private readonly revisionBefore: number
  /** The batch operation being applied: set by the receiver before each one, recorded on what it stages. */
  opIndex: number | null = null
  /** See `withAudit`. */
  private audit: AuditContext | undefined

  /** See `WriteOptions.deferBaseStates`. */
  private readonly deferBaseStates: boolean

  constructor(
    trx: Knex.Transaction,
    scope: string,
    dialect: DatabaseConfig['dialect'],
    revisionBefore: number,
    deferBaseStates = false,
  ) {
    this.trx = trx
    this.scope = scope
    this.dialect = dialect
    this.revisionBefore = revisionBefore
    this.deferBaseStates = deferBaseStates
  }

  /** Prefetches keys (one query) so later `get` calls need none. */
  async load(keys: Iterable<string>, scope = this.scope): Promise<void> {
    const missing = [...new Set(keys)].filter((k) => !this.original.has(idOf(scope, k)))
    if (missing.length === 0) return
    let rows: Array<{ key: string; data: string; revision: number | string }>
    try {
      rows = await selectFlags(this.trx, this.dialect, scope, missing)
    } catch (error) {
      throw toStoreError(error)
    }
    for (const key of missing) this.original.set(idOf(scope, key), null)
    for (const row of rows) {
      this.original.set(idOf(scope, row.key), JSON.parse(row.data) as StoredFlag)
      this.originalRevision.set(idOf(scope, row.key), Number(row.revision))
    }
  }

  /** The flag as committed before this transaction (staged writes ignored), with its revision. */
  async committed(key: string, scope = this.scope): Promise<CommittedFlag> {
    const id = idOf(scope, key)
    if (!this.original.has(id)) await this.load([key], scope)
    return this.loadedCommitted(id) as CommittedFlag
  }

  /** `committed` without a read: undefined when the key was not loaded (a batch's `load` loaded its keys). */
  committedIfLoaded(key: string, scope = this.scope): CommittedFlag | undefined {
    return this.loadedCommitted(idOf(scope, key))
  }

  private loadedCommitted(id: string): CommittedFlag | undefined {
    const flag = this.original.get(id)
    if (flag === undefined) return undefined
    return { flag, revision: flag ? (this.originalRevision.get(id) ?? null) : null }
  }

  /**
   * The store's newest revision as this transaction started writing (its own changes not yet counted): the one the
   * write lock read. A base revision above it was never issued by this store (a client of a restored or reset
   * database): the change log cannot say what that client saw.
   */
  storeRevision(): number {
    return this.revisionBefore
  }

  /**
   * Each key's state at a past revision, from the change log, keyed `${key}@${revision}` (see
   * `readStatesAt`: a fixed number of statements for all pairs, one walk per record). Pairs
   * already read in this transaction, or adopted from a read before the lock, cost no query.
   */
  async statesAt(pairs: ReadonlyArray<RevisionPair>, scope = this.scope): Promise<Map<string, StateAt>> {
    const out = new Map<string, StateAt>()
    const missing: RevisionPair[] = []
    for (const [key, revision] of pairs) {
      const id = pairId(key, revision)
      const known = this.unchangedSince(scope, key, revision) ?? this.states.get(idOf(scope, id))
      if (known) out.set(id, known)
      else missing.push([key, revision])
    }
    if (missing.length === 0) return out
    let read: Awaited<ReturnType<typeof readStatesAt>>
    try {
      // Deferred: a bounded walk under the lock (a few changes since each base, the usual stale edit);
      // a record changed more often than that is read outside the lock.
      const maxSteps = this.deferBaseStates ? MAX_STEPS_UNDER_LOCK : undefined
      read = await readStatesAt(this.trx, this.dialect, scope, missing, { maxSteps })
    } catch (error) {
      throw toStoreError(error)
    }
    if (read.unread.length > 0) throw new BaseStatesNeeded(scope, read.unread)
    for (const [id, state] of read.states) {
      this.states.set(idOf(scope, id), state)
      out.set(id, state)
    }
    return out
  }

  /**
   * Takes states read before this transaction (`FlagStore.readStatesAt`): a record's state at a
   * revision the store had issued never changes, so they answer `statesAt` and `stateAt` without
   * a query under the lock.
   */
  adopt(base: BaseStates): void {
    for (const [id, state] of base.states) this.states.set(idOf(base.scope, id), state)
  }

  /**
   * A loaded record whose committed row is at or before `revision`: that row is its newest at the
   * revision, so its state there is the committed flag. Undefined otherwise (the log tells).
   */
  private unchangedSince(scope: string, key: string, revision: number): StateAt | undefined {
    // Only from what the transaction has loaded: a key it has not read is read with the rest, in bulk. Derived from
    // the loaded row, which never changes in the transaction, so nothing is cached.
    const id = idOf(scope, key)
    const flag = this.original.get(id)
    const at = this.originalRevision.get(id)
    if (!flag || at === undefined || at > revision) return undefined
    return { flag, known: true }
  }

  /** One key's state at a past revision: from `statesAt`'s prefetch (no await), else one query. */
  stateAt(key: string, revision: number, scope = this.scope): StateAt | Promise<StateAt> {
    const id = pairId(key, revision)
    const known = this.unchangedSince(scope, key, revision) ?? this.states.get(idOf(scope, id))
    if (known) return known
    return this.statesAt([[key, revision]], scope).then((states) => states.get(id) ?? { flag: null, known: false })
  }

  /** The flag as this transaction sees it, staged writes included. */
  async get(key: string, scope = this.scope): Promise<StoredFlag | undefined> {
    const id = idOf(scope, key)
    const staged = this.staged.get(id)
    if (staged) return staged.flag ?? undefined
    if (!this.original.has(id)) await this.load([key], scope)
    return this.original.get(id) ?? undefined
  }

  /** Creates or replaces a flag. */
  put(flag: StoredFlag, scope = this.scope): void {
    this.stage(scope, flag.key, flag)
  }

  /** Deletes a flag; resolves false when it did not exist (not an error). */
  async delete(key: string, scope = this.scope): Promise<boolean> {
    const existing = await this.get(key, scope)
    if (!existing) return false
    this.stage(scope, key, null)
    return true
  }

  /**
   * Runs `fn` with `audit` as the audit context of what it stages (a record staged again later takes the later
   * one's): one write can record changes of several authors, e.g. scheduled changes applied together, each naming
   * its own schedule. The change-log rows are still appended in one statement. Calls run one at a time, like the
   * writer's other staging: a second `withAudit` while one is awaited would name the wrong author.
   */
  async withAudit<T>(audit: AuditContext, fn: () => Promise<T>): Promise<T> {
    const outer = this.audit
    this.audit = audit
    try {
      return await fn()
    } finally {
      this.audit = outer
    }
  }

  /**
   * Net changes in first-touched order. Writes that cancel out (create then
   * delete) are dropped, and so is a put whose flag reads exactly like the
   * committed one (same JSON, key order aside): a write that changes nothing
   * records nothing. That needs the committed flag, so it holds for keys this
   * transaction read; a key put without a read (a blind upsert) is written.
   */
  async changes(): Promise<StagedChange[]> {
    const staged = [...this.staged.values()]
    // Deleted keys never read (put, then delete): whether they existed decides if the delete is a change.
    const unknown = staged.filter((c) => c.flag === null && c.existed === undefined)
    for (const [scope, keys] of keysByScope(unknown)) await this.load(keys, scope)
    for (const c of unknown) c.existed = this.original.get(idOf(c.scope, c.key)) !== null
    return staged.filter((c) => (c.flag === null ? c.existed !== false : !this.isUnchanged(c)))
  }

  /** A put of the committed flag as it is; false when the committed flag was never loaded. */
  private isUnchanged(c: StagedChange): boolean {
    const original = this.original.get(idOf(c.scope, c.key))
    // Undefined: never read (a blind upsert), so it is written; null: it did not exist.
    return original !== undefined && original !== null && jsonEqual(c.flag, original)
  }

  private stage(scope: string, key: string, flag: StoredFlag | null): void {
    const id = idOf(scope, key)
    const prior = this.staged.get(id)
    // An unloaded key is upserted without a read; `existed` matters only if it ends up deleted.
    const existed = prior ? prior.existed : this.original.has(id) ? this.original.get(id) !== null : undefined
    this.staged.set(id, { scope, key, flag, existed, opIndex: this.opIndex, audit: this.audit })
  }
}

function keysByScope(changes: readonly StagedChange[]): Map<string, string[]> {
  const out = new Map<string, string[]>()
  for (const c of changes) {
    const keys = out.get(c.scope) ?? []
    keys.push(c.key)
    out.set(c.scope, keys)
  }
  return out
}
