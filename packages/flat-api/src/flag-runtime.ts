import { type Logger, SseHub } from '@flagsync/server-kit'
import { ChangeFeed, type Database, FlagStore, type FlagStoreOptions, LiveFlagSet, openDatabase } from '@flagsync/store'
import { bootstrapFrames, changeFrame } from './stream-frames.js'

export interface FlagRuntimeOptions {
  databaseUrl: string
  /** Keep-alive comment interval on /stream, ms (default 15 000). */
  keepAliveMs?: number
  /** Change-log poll interval, ms (default 1000); the backstop for other processes' writes. */
  pollIntervalMs?: number
  /** Bytes a slow stream subscriber may have queued before it is dropped (default 1 MiB). */
  maxStreamBufferBytes?: number
  storeOptions?: FlagStoreOptions
  /**
   * Change-log entries older than this are pruned hourly (default 7 days; the newest
   * 1 000 are always kept). A follower further behind reloads everything instead.
   */
  changeRetentionMs?: number
  logger?: Logger
}

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
  /** The bootstrap chunk for a new stream (connected + every flag), cached per revision. */
  bootstrap(): string
  close(): Promise<void>
}

export async function openFlagRuntime(options: FlagRuntimeOptions): Promise<FlagRuntime> {
  const db = await openDatabase(options.databaseUrl)
  const store = new FlagStore(db, options.storeOptions)
  const live = new LiveFlagSet()
  const hub = new SseHub({ keepAliveMs: options.keepAliveMs, maxBufferedBytes: options.maxStreamBufferBytes })
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

  const retention = options.changeRetentionMs ?? 7 * 24 * 60 * 60 * 1000
  const prune = () =>
    store.pruneChanges(retention, 1000).catch((err) => options.logger?.warn({ err }, 'could not prune the change log'))
  const pruneTimer = setInterval(prune, 60 * 60 * 1000)
  pruneTimer.unref()

  let cached: { revision: number; frames: string } | undefined
  return {
    db,
    store,
    live,
    feed,
    hub,
    bootstrap() {
      if (cached?.revision !== live.revision) cached = { revision: live.revision, frames: bootstrapFrames(live.list()) }
      return cached.frames
    },
    async close() {
      clearInterval(pruneTimer)
      hub.stop()
      await feed.close()
      await db.close()
    },
  }
}
