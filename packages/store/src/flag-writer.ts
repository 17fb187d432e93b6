import type { Knex } from 'knex'
import { TABLES } from './migrations.js'
import { toStoreError } from './store-error.js'
import type { StoredFlag } from './types.js'

/** A flag staged for commit: null means deleted. */
export interface StagedChange {
  scope: string
  key: string
  flag: StoredFlag | null
  /** Whether the row existed before this transaction; undefined until looked up. */
  existed: boolean | undefined
}

const idOf = (scope: string, key: string) => `${scope}\u0000${key}`
const CHUNK = 500

/**
 * The write side of one transaction. Reads go to the database once per key
 * (batched by `load`), writes are staged in memory and flushed as multi-row
 * statements at commit, so a 500-operation batch costs a handful of queries.
 */
export class FlagWriter {
  readonly trx: Knex.Transaction
  readonly scope: string
  private readonly original = new Map<string, StoredFlag | null>()
  private readonly staged = new Map<string, StagedChange>()

  constructor(trx: Knex.Transaction, scope: string) {
    this.trx = trx
    this.scope = scope
  }

  /** Prefetches keys so later `get` calls need no query. */
  async load(keys: Iterable<string>, scope = this.scope): Promise<void> {
    const missing = [...new Set(keys)].filter((k) => !this.original.has(idOf(scope, k)))
    for (let i = 0; i < missing.length; i += CHUNK) {
      const chunk = missing.slice(i, i + CHUNK)
      let rows: Array<{ key: string; data: string }>
      try {
        rows = await this.trx(TABLES.flags).select('key', 'data').where('scope', scope).whereIn('key', chunk)
      } catch (error) {
        throw toStoreError(error)
      }
      for (const key of chunk) this.original.set(idOf(scope, key), null)
      for (const row of rows) this.original.set(idOf(scope, row.key), JSON.parse(row.data) as StoredFlag)
    }
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

  /** Net changes in first-touched order; writes that cancel out (create then delete) are dropped. */
  async changes(): Promise<StagedChange[]> {
    const staged = [...this.staged.values()]
    const unknown = staged.filter((c) => c.flag === null && c.existed === undefined)
    for (const c of unknown) {
      await this.load([c.key], c.scope)
      c.existed = this.original.get(idOf(c.scope, c.key)) !== null
    }
    return staged.filter((c) => c.existed !== false || c.flag !== null)
  }

  private stage(scope: string, key: string, flag: StoredFlag | null): void {
    const id = idOf(scope, key)
    const prior = this.staged.get(id)
    // An unloaded key is upserted without a read; `existed` matters only if it ends up deleted.
    const existed = prior ? prior.existed : this.original.has(id) ? this.original.get(id) !== null : undefined
    this.staged.set(id, { scope, key, flag, existed })
  }
}
