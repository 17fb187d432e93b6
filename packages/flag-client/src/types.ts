import type { EvaluationErrorCode, EvaluationResult } from '@flagsync/evaluation'
import type { Operation, RetryPolicy } from '@flagsync/protocol'

/** A flag as the stream serves it: document 2's flat flag or document 1's full flag. */
export type ClientFlag = {
  key: string
  is_enabled: boolean
  [field: string]: unknown
}

/** Where the current flag set came from. */
export type FlagSource = 'none' | 'cache' | 'snapshot' | 'stream'

export interface FlagClientStatus {
  /** `connecting` until the first stream bootstrap, `live` while streaming, `polling` on the snapshot fallback, `offline` while the device is. */
  state: 'connecting' | 'live' | 'reconnecting' | 'polling' | 'offline' | 'closed'
  source: FlagSource
  /** Document 1's environment of the SDK key; null for document 2 servers and dashboard connections. */
  environmentId: string | null
  /** Consecutive failed stream connections. */
  failures: number
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

export type FlagClientListener = (event: FlagClientEvent) => void

/**
 * The part of a sync client the flag client needs: it sends edits through it
 * and shows its queued flag operations on top of the server's flags.
 * `createSyncClient()` from `@flagsync/sync-client` provides all of it.
 */
export interface FlagOutbox {
  insert(collection: string, record: Record<string, unknown>, options?: { recordId?: string }): Promise<string>
  update(collection: string, recordId: string, changes: Record<string, unknown>): Promise<void>
  delete(collection: string, recordId: string): Promise<void>
  outbox(): Promise<ReadonlyArray<{ operation: Operation }>>
  subscribe(listener: (status: unknown) => void): () => void
  /** `info.duplicate`: the receiver had applied this batch before (its effect is already, or no longer, on the server). */
  onDelivered(listener: (batchId: string, operations: Operation[], info?: { duplicate?: boolean }) => void): () => void
  /**
   * Called whenever the flag stream goes live: the server is reachable, so
   * an outbox waiting out a network failure can retry now.
   */
  retryNow?(): void
}

/** Where a client learns about connectivity. */
export interface OnlineSource {
  isOnline(): boolean
  /** Called with the new state on every change; returns an unsubscribe function. */
  subscribe(listener: (online: boolean) => void): () => void
}

export interface Clock {
  now(): number
  setTimeout(callback: () => void, ms: number): unknown
  clearTimeout(handle: unknown): void
}

export interface FlagClientOptions {
  /** Absolute URL of the server's `/stream`. */
  streamUrl: string
  /** Sent as `Authorization: Bearer <sdkKey>` (EventSource cannot send headers; fetch can). */
  sdkKey?: string
  /** Send the key as the `sdk_key` query parameter instead (document 1's EventSource form). Default false. */
  sdkKeyInQuery?: boolean
  /** Document 1's `/flags/snapshot`, polled after `snapshotAfterFailures` failed reconnects. */
  snapshotUrl?: string
  /** Consecutive failed stream connections before the snapshot fallback starts. Default 3. */
  snapshotAfterFailures?: number
  /** Snapshot poll interval while the stream is down. Default 15 000 ms. */
  snapshotIntervalMs?: number
  /** Reconnect backoff. Default 1 s doubling to 30 s, +0–30 % jitter. */
  reconnect?: Partial<RetryPolicy>
  /** Document 2 sends no `ready`: the bootstrap counts as complete after this much quiet. Default 100 ms. */
  bootstrapIdleMs?: number
  /** IndexedDB name prefix; the last complete flag set is kept in `<dbName>:flags`. Default 'flagsync'. */
  dbName?: string
  /** Keep the last complete flag set in IndexedDB. Default true. */
  persist?: boolean
  /**
   * Default: the page's own IndexedDB, read when first needed (in Node there
   * is none: no flag cache, impressions in memory). Pass both or neither, from
   * one implementation (e.g. `fake-indexeddb`); one alone throws a TypeError.
   */
  indexedDB?: IDBFactory
  IDBKeyRange?: typeof IDBKeyRange
  fetch?: typeof fetch
  clock?: Clock
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
   * Impression reporting (document 1 only): every evaluation of a known flag is
   * queued in IndexedDB (`<dbName>:impressions`) and POSTed in batches to
   * `…/api/environments/<environment_id>/impressions` with the SDK key. On by
   * default when an `sdkKey` is given; `false` turns it off.
   */
  impressions?: boolean | ImpressionOptions
}

export interface ImpressionOptions {
  /** Default true (it still needs an `sdkKey` and a document 1 server). */
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

export interface ImpressionStatus {
  /** False when turned off, without an SDK key, or closed. */
  enabled: boolean
  /** Recorded and not yet delivered (in IndexedDB or about to be written). */
  queued: number
  sending: boolean
  /** Delivered by this client since it started. */
  delivered: number
  /** Dropped: the queue was full, or the service rejected the batch (a 4xx other than 408, 413, 429). */
  dropped: number
  /** Consecutive failed attempts (network, 408, 429, 5xx). */
  failures: number
  /** When the next attempt is due (epoch ms) while failing. */
  nextAttemptAt: number | null
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

export interface FlagClient {
  /** Resolves once a complete flag set is available: from the stream, a snapshot, or the IndexedDB cache. */
  ready(): Promise<void>
  getFlag(key: string): ClientFlag | undefined
  allFlags(): ClientFlag[]
  /**
   * The flags as they read now (the server's set with this client's edits on top), as one map that is
   * never mutated: the same object until the next `flags` event, a new one after. A cheap identity to
   * compare, e.g. a `useSyncExternalStore` snapshot with `subscribe`.
   */
  snapshot(): ReadonlyMap<string, ClientFlag>
  evaluate(key: string, context?: Record<string, unknown>): FlagEvaluation
  isEnabled(key: string, context?: Record<string, unknown>): boolean
  getValue<T>(key: string, context: Record<string, unknown> | undefined, fallback: T): T
  status(): FlagClientStatus
  subscribe(listener: FlagClientListener): () => void
  /** Queues a create-or-replace through the sync client; visible at once. */
  createFlag(flag: ClientFlag): Promise<void>
  updateFlag(key: string, changes: Record<string, unknown>): Promise<void>
  deleteFlag(key: string): Promise<void>
  /** Delivers the queued impressions now; resolves when the queue is empty, an attempt failed, or offline. */
  flushImpressions(): Promise<void>
  impressionStatus(): ImpressionStatus
  close(): Promise<void>
}
