import type { EvaluationErrorCode, EvaluationResult } from '@flagsync/evaluation'
import type { Operation, RetryPolicy } from '@flagsync/protocol'

/** A flag as the stream serves it: the flat API's flat flag or the flag service's full flag. */
export type ClientFlag = {
  /** Unique within the set; the flag's id in every read and edit. */
  key: string
  /** Off serves the flag's off value (false, or the flag service's off variation) whatever its rules say. */
  is_enabled: boolean
  /** The server's read-only change revision of the flag: the base of this client's edits of it. */
  revision?: number
  /**
   * This client's edit of the flag that the server refused as a conflict,
   * until resolved (`syncClient.resolve(flag.conflict.id, …)`); the flag
   * reads as the server has it meanwhile.
   */
  conflict?: FlagConflict
  [field: string]: unknown
}

/** Where the current flag set came from (`bootstrap`: the `bootstrap` option, e.g. flags the server rendered with). */
export type FlagSource = 'none' | 'bootstrap' | 'cache' | 'snapshot' | 'stream'

/** The connection behind the flag set, as `status()` returns it and `status` events carry it. */
export interface FlagClientStatus {
  /** `connecting` until the first stream bootstrap, `live` while streaming, `polling` on the snapshot fallback, `offline` while the device is. */
  state: 'connecting' | 'live' | 'reconnecting' | 'polling' | 'offline' | 'closed'
  /** Where the flags being served came from; `none` until the first complete set. */
  source: FlagSource
  /** The flag service's environment of the SDK key; null for flat-API servers and dashboard connections. */
  environmentId: string | null
  /** Consecutive failed stream connections. */
  failures: number
  /** Why the last connection failed (`status`: its HTTP status); null again once the stream is live. */
  lastError: { message: string; status?: number } | null
}

/**
 * `error`: something the client could not do in the background and does not
 * retry by itself on the same path (today: the impression queue in IndexedDB
 * failed; see `impressionStatus()`). Stream problems are `status` events.
 */
export type FlagClientEvent =
  | { type: 'flags'; changedKeys: string[] }
  | { type: 'status'; status: FlagClientStatus }
  | { type: 'error'; source: 'impressions'; error: { message: string } }

/** Called synchronously for every event, in the order they happen. It must not throw: nothing catches it. */
export type FlagClientListener = (event: FlagClientEvent) => void

/**
 * The part of a sync client the flag client needs: it sends edits through it
 * and shows its queued flag operations on top of the server's flags.
 * `createSyncClient()` from `@flagsync/sync-client` provides all of it.
 */
export interface FlagOutbox {
  /** Queues a create-or-replace of `record`; resolves its record id once the operation is durable. */
  insert(
    collection: string,
    record: Record<string, unknown>,
    options?: { recordId?: string; baseRevision?: number },
  ): Promise<string>
  /** Queues a merge of `changes` into the record; resolves once durable. `baseRevision`: see `FlagConflict`. */
  update(
    collection: string,
    recordId: string,
    changes: Record<string, unknown>,
    options?: { baseRevision?: number },
  ): Promise<void>
  /** Queues a delete of the record; resolves once durable. */
  delete(collection: string, recordId: string, options?: { baseRevision?: number }): Promise<void>
  /**
   * The operations queued and not yet acknowledged, oldest first: what the flag client shows on top. With `id`
   * (monotonic, as the sync client gives), a re-read costs only the entries that came or went.
   */
  outbox(): Promise<ReadonlyArray<{ id?: number; operation: Operation }>>
  /**
   * Queues an operation; resolves its outbox id once durable. When present, the flag client's edits go
   * through it and show at once from that id, without re-reading the outbox.
   */
  enqueue?(operation: Operation): Promise<number>
  /** Called on every outbox change (the argument is not read); returns an unsubscribe function. */
  subscribe(listener: (status: unknown) => void): () => void
  /** `info.duplicate`: the receiver had applied this batch before (its effect is already, or no longer, on the server). */
  onDelivered(listener: (batchId: string, operations: Operation[], info?: { duplicate?: boolean }) => void): () => void
  /**
   * Called whenever the flag stream goes live: the server is reachable, so
   * an outbox waiting out a network failure can retry now.
   */
  retryNow?(): void
  /** Edits the receiver refused as conflicts, until resolved: their flags read as the server has them. */
  conflicts?(): Promise<ReadonlyArray<FlagConflict>>
}

/**
 * A pending conflict on a flag (the sync client's `Conflict`): my edit, the
 * flag as I saw it (`base`) and as it is now (`current`), until resolved.
 */
export interface FlagConflict {
  /** Pass it to the sync client's `resolve()`. */
  id: number
  /** The outbox collection of flags (`'flags'` unless `collection` says otherwise). */
  collection: string
  /** The flag's key. */
  recordId: string
  /** `field`: someone else changed a field this edit sets; `deleted`: the flag was deleted; `exists`: created by someone else. */
  kind: 'field' | 'deleted' | 'exists'
  /** The fields both sides changed (`field`), or what the others changed. */
  fields: string[]
  /** My edit as it was sent (several queued edits of the flag compacted into one). */
  mine: Operation
  /** The flag as I last saw it (at the base revision); null where absent or no longer known. */
  base: Record<string, unknown> | null
  /** The flag now (theirs); null when deleted. */
  current: Record<string, unknown> | null
  /** The flag's revision on the server now: the base a resolution's write is checked against. Null when unknown. */
  currentRevision: number | null
  /** The receiver's words for it. */
  reason: string
  /** The batch that came back with the conflict. */
  batchId: string
  /** Epoch ms of the 409. */
  detectedAt: number
}

/** Where a client learns about connectivity. */
export interface OnlineSource {
  /** The current state, read whenever the client needs it. */
  isOnline(): boolean
  /** Called with the new state on every change; returns an unsubscribe function. */
  subscribe(listener: (online: boolean) => void): () => void
}

/** Time as the client reads it; tests inject a fake one to run reconnects and polls without waiting. */
export interface Clock {
  /** Milliseconds since the epoch, like `Date.now()`. */
  now(): number
  /** Runs `callback` once after `ms`; returns a handle for `clearTimeout`. */
  setTimeout(callback: () => void, ms: number): unknown
  /** Cancels a pending `setTimeout`; a handle that already ran is ignored. */
  clearTimeout(handle: unknown): void
}

/** The part of the Web Storage API (`localStorage`) the flag cache uses. */
export type KeyValueStorage = Pick<Storage, 'getItem' | 'setItem' | 'removeItem'>

/** Options of `createFlagClient`: only `streamUrl` is required. */
export interface FlagClientOptions {
  /** Absolute URL of the server's `/stream`. */
  streamUrl: string
  /** Sent as `Authorization: Bearer <sdkKey>` (EventSource cannot send headers; fetch can). */
  sdkKey?: string
  /** Send the key as the `sdk_key` query parameter instead (the flag service's EventSource form). Default false. */
  sdkKeyInQuery?: boolean
  /** The flag service's `/flags/snapshot`, polled after `snapshotAfterFailures` failed reconnects. */
  snapshotUrl?: string
  /** Consecutive failed stream connections before the snapshot fallback starts. Default 3. */
  snapshotAfterFailures?: number
  /** Snapshot poll interval while the stream is down. Default 15 000 ms. */
  snapshotIntervalMs?: number
  /** Reconnect backoff. Default 1 s doubling to 30 s, +0–30 % jitter. */
  reconnect?: Partial<RetryPolicy>
  /** The flat API sends no `ready`: the bootstrap counts as complete after this much quiet. Default 100 ms. */
  bootstrapIdleMs?: number
  /**
   * Flags the page already has (e.g. the server's `GET /api/flags`, rendered with and embedded in the page): the
   * client serves them from creation (`status().source === 'bootstrap'`, `ready()` resolved) until the stream or a
   * snapshot brings the server's set. A set from the flag cache replaces them only when it is newer: when its
   * highest flag `revision` is above theirs (`isNewerFlagSet`); an older or unordered cached set never does, so a
   * server-rendered page never falls back to a previous visit's flags. Not saved to the cache. Entries without a
   * string `key` are skipped.
   */
  bootstrap?: readonly ClientFlag[]
  /**
   * Name prefix of the flag cache: every saved set is kept in the IndexedDB database `<dbName>:flags` (one row per
   * stream URL), and a copy of the last one saved in `localStorage` under `<dbName>:flags`. Default 'flagsync'.
   */
  dbName?: string
  /** Keep the last complete flag set (IndexedDB, and its `localStorage` copy), so an offline start has flags. Default true. */
  persist?: boolean
  /**
   * Where a copy of the last saved flag set is kept: read synchronously at creation, so a client started offline
   * answers from it at once, before IndexedDB has opened. A set over 1 000 000 characters of JSON, or one the
   * storage refuses (quota), has no copy and is read from IndexedDB. Default: the page's `localStorage` where the
   * client uses the page's own IndexedDB (no `indexedDB` option); otherwise none. `null`: no copy.
   */
  localStorage?: KeyValueStorage | null
  /**
   * Default: the page's own IndexedDB, read when first needed (in Node there
   * is none: no flag cache unless a `localStorage` is given, impressions in
   * memory). Pass both or neither, from
   * one implementation (e.g. `fake-indexeddb`); one alone throws a TypeError.
   */
  indexedDB?: IDBFactory
  /** The `IDBKeyRange` of the same implementation as `indexedDB`. */
  IDBKeyRange?: typeof IDBKeyRange
  /** Used for the stream, snapshots and impressions. Default: the global `fetch`. */
  fetch?: typeof fetch
  /** Default: the real clock (`Date.now`, global timers). */
  clock?: Clock
  /** A number in [0, 1) for backoff jitter and impression sampling. Default `Math.random`. */
  random?: () => number
  /** Default: `navigator.onLine` and window `online`/`offline` events. Offline pauses reconnects; back online reconnects at once. */
  online?: OnlineSource
  /** A sync client: flag edits go through its outbox and its queued flag operations show at once. */
  syncClient?: FlagOutbox
  /** Collection name of flags in the outbox. Default 'flags'. */
  collection?: string
  /** Acknowledged edits stay visible until the stream echoes them, or this long at most. Default 30 000 ms. */
  echoTimeoutMs?: number
  /**
   * Impression reporting (flag service only): every evaluation of a known flag is
   * queued in IndexedDB (`<dbName>:impressions`) and POSTed in batches to
   * `…/api/environments/<environment_id>/impressions` with the SDK key. On by
   * default when an `sdkKey` is given; `false` turns it off.
   */
  impressions?: boolean | ImpressionOptions
}

/** Impression reporting settings (`FlagClientOptions.impressions`); every field is optional. */
export interface ImpressionOptions {
  /** Default true (it still needs an `sdkKey` and a flag service server). */
  enabled?: boolean
  /** The service's base URL. Default: the stream URL's directory (`https://flags.example.com/` for `…/stream`). */
  baseUrl?: string
  /** The oldest queued impression waits at most this long for a batch to fill. Default 2000 ms. */
  flushIntervalMs?: number
  /** Impressions per request, 1 to 500 (the service's limit). Default 500. */
  maxBatch?: number
  /** Impressions kept while they cannot be delivered; further ones are dropped (counted). Default 10 000. */
  maxQueue?: number
  /** Share of evaluations recorded, 0 to 1. Default 1. */
  sampleRate?: number
  /** Send the evaluation context with each impression. Default true. */
  includeContext?: boolean
  /** Backoff of failed deliveries. Default 1 s doubling to 60 s, +0–30 % jitter; a longer Retry-After wins (≤ 5 min). */
  retry?: Partial<RetryPolicy>
}

/** The impression reporter's state, as `impressionStatus()` returns it. */
export interface ImpressionStatus {
  /** False when turned off, without an SDK key, or closed. */
  enabled: boolean
  /** Recorded and not yet delivered (in IndexedDB or about to be written). */
  queued: number
  /** A delivery request is in flight. */
  sending: boolean
  /** Delivered by this client since it started. */
  delivered: number
  /** Dropped: the queue was full, or the service rejected the batch (a 4xx other than 408, 413, 429). */
  dropped: number
  /** Consecutive failed attempts (network, 408, 429, 5xx). */
  failures: number
  /** When the next attempt is due (epoch ms) while failing. */
  nextAttemptAt: number | null
  /** Why the last delivery failed (`status`: the service's HTTP status); null after a success. */
  lastError: { message: string; status?: number } | null
  /**
   * Where queued impressions are kept: `indexeddb` (across reloads), `memory`
   * (no IndexedDB here, or it could not be read: an `error` event said why),
   * `none` until the reporter starts.
   */
  storage: 'indexeddb' | 'memory' | 'none'
}

/** An evaluation through the client: the evaluator's result, or FLAG_NOT_FOUND when no such flag exists. */
export type FlagEvaluation = Omit<EvaluationResult, 'errorCode'> & {
  errorCode?: EvaluationErrorCode | 'FLAG_NOT_FOUND'
  flagFound: boolean
}

/**
 * Live flags, made by `createFlagClient`. Reads are synchronous and local (the server's set with this client's
 * queued edits on top); edits go through the sync client's outbox and read back at once.
 *
 * @example
 * ```ts
 * await flags.ready()
 * flags.isEnabled('new-checkout', { user_id: 'u-42' })
 * const off = flags.subscribe((e) => { if (e.type === 'flags') render(e.changedKeys) })
 * ```
 */
export interface FlagClient {
  /**
   * Resolves once a complete flag set is available: the `bootstrap` option (at once), the stream, a snapshot, or the
   * flag cache (at once when the cache's `localStorage` copy answered during creation).
   */
  ready(): Promise<void>
  /** The flag as it reads now (server state with this client's edits on top); undefined when there is none. */
  getFlag(key: string): ClientFlag | undefined
  /** Every flag as it reads now, sorted by key; a new array on each call. */
  allFlags(): ClientFlag[]
  /**
   * The flags as they read now (the server's set with this client's edits on top), as one map that is
   * never mutated: the same object until the next `flags` event, a new one after. A cheap identity to
   * compare, e.g. a `useSyncExternalStore` snapshot with `subscribe`.
   */
  snapshot(): ReadonlyMap<string, ClientFlag>
  /**
   * Evaluates the flag locally for `context` (attributes such as `user_id`, which also buckets rollouts): the
   * value, its reason and variant, or `FLAG_NOT_FOUND` with `flagFound: false`. Records an impression when
   * impressions are on; never throws and never waits for the network.
   */
  evaluate(key: string, context?: Record<string, unknown>): FlagEvaluation
  /** True only when the flag evaluates to exactly `true` for `context`; false for a missing flag. */
  isEnabled(key: string, context?: Record<string, unknown>): boolean
  /**
   * The evaluated value, or `fallback` when the flag is missing or serves no value. The value is not checked
   * against `T`: use `evaluate` or the OpenFeature provider (`TYPE_MISMATCH`) where the type matters.
   */
  getValue<T>(key: string, context: Record<string, unknown> | undefined, fallback: T): T
  /** The connection state now; a new object after each change (the same one until then). */
  status(): FlagClientStatus
  /**
   * Calls `listener` on every `flags` change (with the keys that read differently), `status` change and
   * background `error`; returns the function that unsubscribes.
   */
  subscribe(listener: FlagClientListener): () => void
  /** Queues a create-or-replace through the sync client; visible at once. */
  createFlag(flag: ClientFlag): Promise<void>
  /**
   * Queues a merge of `changes` into the flag through the sync client; the flag reads changed as soon as this
   * resolves, before the server has it. Rejects without a `syncClient` option.
   */
  updateFlag(key: string, changes: Record<string, unknown>): Promise<void>
  /** Queues a delete through the sync client; the flag is gone from reads at once. Rejects without a `syncClient`. */
  deleteFlag(key: string): Promise<void>
  /** Delivers the queued impressions now; resolves when the queue is empty, an attempt failed, or offline. */
  flushImpressions(): Promise<void>
  /** The impression reporter's counters and state now. */
  impressionStatus(): ImpressionStatus
  /**
   * Stops the stream, polls and timers, hands the last server set to the flag cache, closes the impression
   * queue and emits a final `closed` status; listeners are dropped after it. Impressions still queued stay in
   * IndexedDB for the next client.
   */
  close(): Promise<void>
}
