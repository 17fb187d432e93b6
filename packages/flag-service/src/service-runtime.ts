import { type Logger, silentLogger } from '@flagsync/server-kit'
import {
  type AuditContext,
  type Database,
  type FlagChange,
  FlagStore,
  type FlagStoreOptions,
  type FlagWriter,
  type WriteResult,
} from '@flagsync/store'
import type { Knex } from 'knex'
import { verifyAccess, type WriteCaller } from './auth/verify-access.js'
import { recordFlagEvents } from './webhooks/flag-events.js'

export interface ServiceRuntimeOptions {
  databaseUrl: string
  /** Epoch ms; tests inject one to drive lockouts, sessions and token expiry. Default `Date.now`. */
  clock?: () => number
  logger?: Logger
  storeOptions?: Omit<FlagStoreOptions, 'clock'>
  /** PostgreSQL pool size (default 10). */
  poolMax?: number
  /** How long a SQLite statement waits for another connection's write lock (default 5 000 ms). */
  busyTimeoutMs?: number
}

export type FlagChangeListener = (changes: FlagChange[]) => void | Promise<void>

/**
 * One process's view of the service: the database (flag-store tables plus the
 * service's own), the flag store whose scope is an environment id, the clock
 * and the logger. Every router receives it.
 */
export interface ServiceRuntime {
  readonly db: Database
  readonly knex: Knex
  readonly store: FlagStore
  readonly clock: () => number
  readonly logger: Logger
  /**
   * Runs `fn` in one write transaction of the flag store, so management writes
   * and flag writes serialize on the same lock (invariants such as "the last
   * project" cannot race), and flag rows removed with a project or environment
   * reach the change log atomically with it. Flag changes are handed to the
   * `onFlagChanges` listeners after the commit, before this resolves.
   * `audit` (who and through what) is recorded on every change-log row the write appends.
   * `caller` (a route's `req`): its credential and roles are checked again inside the transaction, before `fn`
   * (see `verifyAccess`), so a write that waited for the lock while its access was revoked changes nothing.
   */
  write<T>(
    fn: (trx: Knex.Transaction, flags: FlagWriter) => Promise<T>,
    audit?: AuditContext,
    caller?: WriteCaller,
  ): Promise<T>
  /** `write`, also resolving the committed flag changes (their revisions, for the answer's `revision`). */
  commit<T>(
    fn: (trx: Knex.Transaction, flags: FlagWriter) => Promise<T>,
    audit?: AuditContext,
    caller?: WriteCaller,
  ): Promise<WriteResult<T>>
  /**
   * Hands changes committed outside `write` (the sync receiver writes through the store itself)
   * to the `onFlagChanges` listeners; a failing listener is logged, never thrown.
   */
  publish(changes: FlagChange[]): Promise<void>
  /** Committed flag changes made through `write` (the flags feature feeds its change feed from here). */
  onFlagChanges(listener: FlagChangeListener): () => void
  /** Runs on `close`, newest first, before the database closes (streams, feeds, timers). */
  onClose(fn: () => void | Promise<void>): void
  close(): Promise<void>
}

/**
 * The runtime on an open, migrated database (`openServiceRuntime` in open-service-runtime.ts opens and migrates
 * it: that needs every feature's migrations, which import this module's types).
 */
export function createServiceRuntime(
  db: Database,
  options: Omit<ServiceRuntimeOptions, 'databaseUrl'>,
): ServiceRuntime {
  const clock = options.clock ?? Date.now
  const logger = options.logger ?? silentLogger()
  const store = new FlagStore(db, {
    ...options.storeOptions,
    clock,
    // Every flag write (REST, /sync, approvals, promotion) passes here: its webhook events commit with it.
    async beforeCommit(trx, changes, audit) {
      await recordFlagEvents(trx, changes, audit, clock())
      await options.storeOptions?.beforeCommit?.(trx, changes, audit)
    },
  })
  const listeners = new Set<FlagChangeListener>()
  const closers: Array<() => void | Promise<void>> = []
  let closed = false

  async function publish(changes: FlagChange[]): Promise<void> {
    if (changes.length === 0) return
    for (const listener of listeners) {
      try {
        await listener(changes)
      } catch (err) {
        logger.warn({ err }, 'a flag change listener failed')
      }
    }
  }
  async function commit<T>(
    fn: (trx: Knex.Transaction, flags: FlagWriter) => Promise<T>,
    audit?: AuditContext,
    caller?: WriteCaller,
  ): Promise<WriteResult<T>> {
    const written = await store.write(
      async (writer) => {
        if (caller) await verifyAccess(writer.trx, caller, clock())
        return fn(writer.trx, writer)
      },
      '',
      audit,
    )
    await publish(written.changes)
    return written
  }

  return {
    db,
    knex: db.knex,
    store,
    clock,
    logger,
    commit,
    publish,
    async write(fn, audit, caller) {
      return (await commit(fn, audit, caller)).result
    },
    onFlagChanges(listener) {
      listeners.add(listener)
      return () => listeners.delete(listener)
    },
    onClose(fn) {
      closers.push(fn)
    },
    async close() {
      if (closed) return
      closed = true
      for (const fn of closers.reverse()) await fn()
      await db.close()
    },
  }
}
