import { type FlagStore, NOTIFY_CHANNEL } from './flag-store.js'
import { TABLES } from './migrations.js'
import { toStoreError } from './store-error.js'
import type { FlagChange, StoredFlag } from './types.js'

export interface ChangeFeedOptions {
  /** Backstop poll of the change log, in ms (default 1000): catches changes a missed NOTIFY or another SQLite process made. */
  pollIntervalMs?: number
  /** On PostgreSQL, LISTEN for commits so other instances' changes arrive at once (default true). */
  listen?: boolean
  onError?: (error: unknown) => void
}

export type ChangeListener = (changes: FlagChange[]) => void
/** Called when the feed fell behind the pruned log and its state must be rebuilt from `loadAll`. */
export type ResetListener = () => void

interface PgNotifyConnection {
  query(sql: string): Promise<unknown>
  on(event: 'notification', listener: () => void): void
  on(event: 'error', listener: (error: unknown) => void): void
  removeAllListeners(): void
}

/**
 * Follows the change log from a known revision and hands each change to
 * listeners exactly once, in revision order, whichever way it arrived: the
 * in-process fast path (`ingest`), a PostgreSQL NOTIFY or the periodic poll.
 * All three go through one serial queue, so they can never reorder.
 */
export class ChangeFeed {
  private readonly store: FlagStore
  private readonly options: Required<Omit<ChangeFeedOptions, 'onError'>> & Pick<ChangeFeedOptions, 'onError'>
  private revisionValue = 0
  private queue: Promise<void> = Promise.resolve()
  private pendingCatchUp = false
  private readonly listeners = new Set<ChangeListener>()
  private readonly resetListeners = new Set<ResetListener>()
  private timer: ReturnType<typeof setInterval> | undefined
  private listenConn: PgNotifyConnection | undefined
  private closed = false

  constructor(store: FlagStore, options: ChangeFeedOptions = {}) {
    this.store = store
    this.options = {
      pollIntervalMs: options.pollIntervalMs ?? 1000,
      listen: options.listen ?? true,
      onError: options.onError,
    }
  }

  get revision(): number {
    return this.revisionValue
  }

  onChanges(listener: ChangeListener): () => void {
    this.listeners.add(listener)
    return () => this.listeners.delete(listener)
  }

  onReset(listener: ResetListener): () => void {
    this.resetListeners.add(listener)
    return () => this.resetListeners.delete(listener)
  }

  /** Starts following after `revision` (the one `loadAll` returned). */
  async start(revision: number): Promise<void> {
    this.revisionValue = revision
    if (this.options.pollIntervalMs > 0) {
      // catchUp never rejects: a failed read goes to onError and the next tick tries again.
      this.timer = setInterval(() => void this.catchUp(), this.options.pollIntervalMs)
      this.timer.unref?.()
    }
    if (this.options.listen && this.store.db.config.dialect === 'postgres') await this.listen()
  }

  /** The fast path after an in-process commit: applied directly when contiguous, else fetched. */
  ingest(changes: FlagChange[]): Promise<void> {
    return this.enqueue(async () => {
      const fresh = changes.filter((c) => c.revision > this.revisionValue)
      if (fresh.length === 0) return
      if (fresh[0]?.revision === this.revisionValue + 1 && isContiguous(fresh)) this.emit(fresh)
      else await this.fetchAll()
    })
  }

  /** Reads whatever the log has past our revision; concurrent calls coalesce into one. */
  catchUp(): Promise<void> {
    if (this.pendingCatchUp) return this.queue
    this.pendingCatchUp = true
    return this.enqueue(async () => {
      this.pendingCatchUp = false
      await this.fetchAll()
    })
  }

  async close(): Promise<void> {
    this.closed = true
    if (this.timer) clearInterval(this.timer)
    const conn = this.listenConn
    this.listenConn = undefined
    if (conn) {
      conn.removeAllListeners()
      await this.store.db.knex.client.destroyRawConnection(conn).catch(() => {})
    }
    await this.queue
  }

  private enqueue(task: () => Promise<void>): Promise<void> {
    const run = this.queue.then(task).catch((error) => this.options.onError?.(error))
    this.queue = run
    return run
  }

  private async fetchAll(): Promise<void> {
    if (this.closed) return
    for (;;) {
      const changes = await this.store.changesSince(this.revisionValue, 1000)
      if (changes.length === 0) return
      // pruneHistory keeps a record's latest row, so a gap may follow a contiguous start: check them all.
      const gap = changes[0]?.revision !== this.revisionValue + 1 || !isContiguous(changes)
      if (gap && (await this.fellBehind())) return
      this.emit(changes)
      if (changes.length < 1000) return
    }
  }

  /** A gap means the log was pruned past us: rebuild from a full load instead of skipping changes. */
  private async fellBehind(): Promise<boolean> {
    if ((await this.store.prunedThrough()) <= this.revisionValue) return false
    const { revision } = await this.store.loadAll()
    this.revisionValue = revision
    for (const listener of this.resetListeners) listener()
    return true
  }

  private emit(changes: FlagChange[]): void {
    const last = changes[changes.length - 1]
    if (last) this.revisionValue = last.revision
    for (const listener of this.listeners) listener(changes)
  }

  private async listen(): Promise<void> {
    if (this.closed) return
    try {
      const conn = (await this.store.db.knex.client.acquireRawConnection()) as PgNotifyConnection
      conn.on('notification', () => void this.catchUp())
      conn.on('error', (error) => {
        this.options.onError?.(error)
        if (this.listenConn === conn) this.listenConn = undefined
        // The poll keeps changes flowing meanwhile; try to listen again shortly.
        setTimeout(() => void this.listen(), 1000).unref?.()
      })
      await conn.query(`LISTEN ${NOTIFY_CHANNEL}`)
      this.listenConn = conn
      // Anything committed between loadAll and LISTEN is picked up now.
      void this.catchUp()
    } catch (error) {
      this.options.onError?.(error)
      setTimeout(() => void this.listen(), 1000).unref?.()
    }
  }
}

function isContiguous(changes: FlagChange[]): boolean {
  for (let i = 1; i < changes.length; i++) {
    if (changes[i]?.revision !== (changes[i - 1]?.revision ?? 0) + 1) return false
  }
  return true
}

export interface MissedChangesOptions {
  /** Only changes of these scopes (default: every scope). */
  scopes?: readonly string[]
  /** More changes than this and the client is better served by a full bootstrap (default 1 000). */
  limit?: number
}

/**
 * The changes a stream client that last saw revision `from` missed, oldest
 * first, through `upTo` (the revision the server's live state is at). Undefined
 * when the client must start over with a full bootstrap instead: `from` is
 * past `upTo` (an id this store never issued, or a database restored since),
 * the log was pruned past `from`, or more than `limit` changes were missed.
 * Event ids are change-log revisions, so this answers the same on every
 * instance and after a restart.
 */
export async function readMissedChanges(
  store: FlagStore,
  from: number,
  upTo: number,
  options: MissedChangesOptions = {},
): Promise<FlagChange[] | undefined> {
  if (from > upTo) return undefined
  if (from === upTo) return []
  const limit = options.limit ?? 1000
  const query = store.db
    .knex(TABLES.changes)
    .where('revision', '>', from)
    .andWhere('revision', '<=', upTo)
    .orderBy('revision')
    .limit(limit + 1)
    .select('revision', 'scope', 'key', 'data')
  if (options.scopes) query.whereIn('scope', [...options.scopes])
  let rows: Array<{ revision: number | string; scope: string; key: string; data: string | null }>
  let covered: boolean
  try {
    rows = await query
    // Read after the rows: a prune that could have removed one of them shows by now. The mark covers pruning
    // that keeps each record's latest row; the oldest row, a log cut off below `from` however it was.
    const [prunedThrough, oldest] = await Promise.all([store.prunedThrough(), store.oldestRevision()])
    covered = prunedThrough <= from && oldest > 0 && oldest <= from + 1
  } catch (error) {
    throw toStoreError(error)
  }
  if (rows.length > limit || !covered) return undefined
  return rows.map((r) => ({
    revision: Number(r.revision),
    scope: r.scope,
    key: r.key,
    json: r.data,
    flag: r.data === null ? null : (JSON.parse(r.data) as StoredFlag),
  }))
}
