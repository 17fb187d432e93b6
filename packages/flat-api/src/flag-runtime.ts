import { type Logger, SseHub } from '@flagsync/server-kit'
import {
  AuditLog,
  ChangeFeed,
  type Database,
  type FlagChange,
  FlagStore,
  type FlagStoreOptions,
  LiveFlagSet,
  openDatabase,
  readMissedChanges,
} from '@flagsync/store'
import { bootstrapFrames, changeFrame } from './stream-frames.js'

export interface FlagRuntimeOptions {
  databaseUrl: string
  /** Keep-alive comment interval on /stream, ms (default 15 000). */
  keepAliveMs?: number
  /** Change-log poll interval, ms (default 1000); the backstop for other processes' writes. */
  pollIntervalMs?: number
  /** Bytes a slow stream subscriber may have queued behind its bootstrap before it is dropped (default 1 MiB). */
  maxStreamBufferBytes?: number
  /** Open /stream connections at most (default 10 000); past it a new one gets 503 with Retry-After. */
  maxStreamConnections?: number
  /** Base of the `retry:` sent on every stream, ms (default 1 000; each connection adds up to as much again). */
  streamRetryMs?: number
  storeOptions?: FlagStoreOptions
  /**
   * Change-log entries older than this are pruned hourly (default 7 days; the newest
   * 1 000 are always kept). A follower further behind reloads everything instead.
   * The log also holds the audit trail: the longer of this and `auditRetentionMs` applies.
   */
  changeRetentionMs?: number
  /** How long audit entries are kept (AUDIT_RETENTION_DAYS, default 90 days). */
  auditRetentionMs?: number
  logger?: Logger
}

const DEFAULT_AUDIT_RETENTION_MS = 90 * 24 * 60 * 60 * 1000

/** A client further behind than this (or than there are flags) gets a full bootstrap instead. */
const MAX_RESUMED_CHANGES = 1000

/**
 * One process's view of the flag store: the live set kept current by the
 * change feed, and the stream hub every change is broadcast on. The API, the
 * receiver and the stream all share it.
 */
export interface FlagRuntime {
  readonly db: Database
  readonly store: FlagStore
  readonly live: LiveFlagSet
  readonly feed: ChangeFeed
  readonly hub: SseHub
  /** The audit trail (history per flag, all changes), read from the change log. */
  readonly audit: AuditLog
  /**
   * Prunes the change log and audit trail past the retention, keeping each
   * flag's latest state and the newest 1 000 entries; runs hourly in the background.
   */
  prune(): Promise<number>
  /**
   * The bootstrap chunk for a new stream (connected + every flag), one Buffer
   * per revision written by reference to every new subscriber, never copied.
   */
  bootstrap(): Buffer
  /**
   * The changes a client that last saw revision `from` missed, in order, up
   * to `upTo` (the live revision when asked; `readMissedChanges` of the store).
   * Undefined when the client needs a full bootstrap: `from` is ahead of this
   * process, the log no longer reaches back to it, or more changes were
   * missed than there are flags (then the bootstrap is smaller).
   */
  missedChanges(from: number, upTo: number): Promise<FlagChange[] | undefined>
  close(): Promise<void>
}

export async function openFlagRuntime(options: FlagRuntimeOptions): Promise<FlagRuntime> {
  const db = await openDatabase(options.databaseUrl)
  const store = new FlagStore(db, options.storeOptions)
  // Every flag the API and the stream send carries its revision (appended to the stored JSON, not re-serialized).
  const live = new LiveFlagSet({ revisionInJson: true })
  const hub = new SseHub({
    keepAliveMs: options.keepAliveMs,
    maxBufferedBytes: options.maxStreamBufferBytes,
    maxConnections: options.maxStreamConnections,
    retryMs: options.streamRetryMs,
  })
  const feed = new ChangeFeed(store, {
    pollIntervalMs: options.pollIntervalMs,
    onError: (err) => options.logger?.warn({ err }, 'change feed: could not read the change log; retrying'),
  })

  const initial = await store.loadAll('')
  live.replaceAll(initial.rows, initial.revision)
  feed.onChanges((changes) => {
    for (const change of changes) {
      if (change.scope !== '') continue
      live.apply(change)
      hub.broadcast(changeFrame(change))
    }
  })
  feed.onReset(() => {
    // Fell behind a pruned log: reload, then make every subscriber reconnect and rebuild.
    void store.loadAll('').then(({ rows, revision }) => {
      live.replaceAll(rows, revision)
      hub.closeAll()
    })
  })
  await feed.start(initial.revision)

  const retention = Math.max(
    options.changeRetentionMs ?? 7 * 24 * 60 * 60 * 1000,
    options.auditRetentionMs ?? DEFAULT_AUDIT_RETENTION_MS,
  )
  // pruneHistory, not pruneChanges: each flag's latest state stays, so conflict checks keep their base values.
  const prune = () => store.pruneHistory(retention, 1000)
  const pruneTimer = setInterval(
    () => void prune().catch((err) => options.logger?.warn({ err }, 'could not prune the change log')),
    60 * 60 * 1000,
  )
  pruneTimer.unref()

  let cached: { revision: number; frames: Buffer } | undefined
  const missedChanges = (from: number, upTo: number) =>
    readMissedChanges(store, from, upTo, { scopes: [''], limit: Math.min(MAX_RESUMED_CHANGES, live.size()) })
  return {
    db,
    store,
    live,
    feed,
    hub,
    audit: new AuditLog(db),
    prune,
    bootstrap() {
      if (cached?.revision !== live.revision) {
        cached = { revision: live.revision, frames: Buffer.from(bootstrapFrames(live.list())) }
      }
      return cached.frames
    },
    missedChanges,
    async close() {
      clearInterval(pruneTimer)
      hub.stop()
      await feed.close()
      await db.close()
    },
  }
}
