import type { Operation, RetryPolicy } from '@flagsync/protocol'

/** What the client is doing; see the README for the exact transitions. */
export type SyncState = 'idle' | 'syncing' | 'backoff' | 'offline' | 'blocked'

/** The last failed delivery, as the status reports it. */
export interface DeliveryError {
  /** `network`: no response (or timeout); `transient`: 408, 429, 5xx or other non-2xx; `rejected`: any other 4xx. */
  kind: 'network' | 'transient' | 'rejected'
  /** HTTP status, absent for network errors and timeouts. */
  status?: number
  /** The receiver's error `code` when its body has one, else `network`, `timeout` or `http_<status>`. */
  code: string
  /** A sentence for people: the receiver's `error` when it sent one, else what went wrong on the way. */
  message: string
  /** The receiver's response body (parsed JSON when it was JSON, else text). */
  body?: unknown
  /** Index of the offending operation in the batch as sent, when the receiver names it. */
  operationIndex?: number
  /**
   * The outbox ids (see `outbox()`) of the queued operations the rejected operation was
   * compacted from: pass them to `discard()` to drop exactly the poison operation.
   */
  outboxIds?: number[]
  /** The batch the error belongs to. */
  batchId: string
  /** Epoch ms of the failure. */
  at: number
}

/** What `status()` returns and `subscribe` listeners receive. */
export interface SyncStatus {
  /** What the client is doing now. */
  state: SyncState
  /** Operations still to send, after compaction (same number as `pending()`). */
  pending: number
  /** The last delivery failure; cleared by the next successful delivery. */
  lastError: DeliveryError | null
  /** Epoch ms when the current batch is retried next; null when no retry is scheduled. */
  nextAttemptAt: number | null
  /** Edits the receiver answered with a conflict, waiting for `resolve()` (see `conflicts()`). */
  conflicts: number
}

/** Gets each new status; calls are coalesced, so a burst of changes may arrive as one. */
export type StatusListener = (status: SyncStatus) => void
/** What the receiver said of a delivered batch: `duplicate` when it had applied this batchId before. */
export interface DeliveryInfo {
  /** True when the receiver had applied this batch before (a retry after a lost response): nothing changed now. */
  duplicate: boolean
}
/** Gets each acknowledged batch: its id and its operations as sent (after compaction). */
export type DeliveredListener = (batchId: string, operations: Operation[], info: DeliveryInfo) => void

/** One operation of the local outbox. */
export interface OutboxEntry {
  /** Local id (monotonic); pass it to `discard`. */
  id: number
  /** The operation as the app queued it (before compaction). */
  operation: Operation
  /** The batch it was cut into (in flight or waiting for a retry), or null while not yet batched. */
  batchId: string | null
  /** Epoch ms when the app queued it. */
  queuedAt: number
}

/** An operation the receiver rejected, moved aside when `deadLetter` is on. */
export interface DeadLetter {
  /** Local id in the dead-letter store; pass it to `clearDeadLetters`. */
  id: number
  /** The batch that was rejected. */
  batchId: string
  /** The operation as it was sent (after compaction). */
  operation: Operation
  /** The rejection, as the status reported it. */
  error: DeliveryError
  /** Epoch ms when it was moved to the dead-letter store. */
  deadAt: number
}

/** What one `flush()` achieved. */
export interface FlushResult {
  /** Operations (as sent, after compaction) acknowledged during this flush. */
  delivered: number
  /** Operations still to send, after compaction. */
  pending: number
}

// Time source and connectivity are the same seams as the flag client's: one app injects one of each.
import type { Clock, OnlineSource } from '@flagsync/flag-client'

export type { Clock, OnlineSource }

/** The part of the Web Locks API (`navigator.locks`) the client uses. */
export interface LockManagerLike {
  /** `navigator.locks.request`: runs `callback` while holding the named lock (with `ifAvailable`, at once or never). */
  request(
    name: string,
    options: { ifAvailable?: boolean; signal?: AbortSignal },
    callback: (lock: unknown) => Promise<unknown>,
  ): Promise<unknown>
}

/** The part of BroadcastChannel the client uses to tell other tabs that the outbox changed. */
export interface BroadcastChannelLike {
  /** Sends to every other channel of the same name (not to this one). */
  postMessage(message: unknown): void
  /** Stops sending and receiving. */
  close(): void
  /** Set by the client to hear other tabs. */
  onmessage: ((event: { data: unknown }) => void) | null
}
/** Opens a channel by name; the default is `(name) => new BroadcastChannel(name)`. */
export type BroadcastChannelFactory = (name: string) => BroadcastChannelLike

/** Fixed headers, or a function called before each delivery (so a token can be refreshed). */
export type HeadersOption = Record<string, string> | (() => Record<string, string> | Promise<Record<string, string>>)

/** Options of `createSyncClient`: only `webhookUrl` is required. */
export interface SyncClientOptions {
  /** Absolute http(s) URL of the webhook receiver. */
  webhookUrl: string
  /** Headers sent with every delivery, or a function returning them (e.g. a fresh token). Default {}. */
  headers?: HeadersOption
  /**
   * Who is editing (e.g. the signed-in user's name), stamped on every batch as
   * `X-Flagsync-Actor` (percent-encoded) for the receiver's audit trail, which
   * records it as declared and unverified. 1–256 characters. Default: none.
   */
  actor?: string
  /** Most operations (after compaction) per request. Default 50. */
  batchSize?: number
  /** Background loop interval in ms. Default 5000. */
  syncIntervalMs?: number
  /** IndexedDB database name; instances with the same name share one outbox. Default 'flagsync'. */
  dbName?: string
  /** Backoff policy; missing fields take the defaults. */
  retry?: Partial<RetryPolicy>
  /** A delivery without a response after this long counts as a network error. Default 30 000 ms. */
  requestTimeoutMs?: number
  /** Move the operations of a rejected batch (non-transient 4xx) to a dead-letter store instead of blocking. Default false. */
  deadLetter?: boolean
  /**
   * While started and online, a write triggers a delivery after this short pause, which
   * gathers the writes of one user action into one batch. null: writes wait for the
   * background interval or `flush()`. Default 25 ms.
   */
  pushDelayMs?: number | null
  /**
   * Durability of the outbox's read-write transactions: `'relaxed'` (default) reports a write committed once
   * the operating system has it, which survives a tab or browser crash but maybe not a power loss;
   * `'strict'` waits for the disk flush (slower: see the README); `'default'` leaves it to the browser.
   * Browsers without the hint ignore it.
   */
  durability?: 'relaxed' | 'strict' | 'default'
  /** IndexedDB lease duration used when Web Locks are missing. Default 5000 ms. */
  leaseMs?: number
  /** Default: the page's IndexedDB. In Node pass one (e.g. `fake-indexeddb`) together with its `IDBKeyRange`. */
  indexedDB?: IDBFactory
  /** The `IDBKeyRange` of the same implementation as `indexedDB`. */
  IDBKeyRange?: typeof IDBKeyRange
  /** Used for deliveries. Default: the global `fetch`. */
  fetch?: typeof fetch
  /** Default: `navigator.onLine` plus window `online`/`offline` events, read lazily. */
  online?: OnlineSource
  /** Default: the real clock (`Date.now`, global timers). */
  clock?: Clock
  /** Random source for jitter, [0, 1). Default Math.random. */
  random?: () => number
  /** Web Locks; null forces the IndexedDB lease. Default `navigator.locks` when present. */
  locks?: LockManagerLike | null
  /** Cross-tab change notification; null disables it. Default: BroadcastChannel when present. */
  broadcastChannel?: BroadcastChannelFactory | null
  /** Id generator for batch ids and generated record ids. Default crypto.randomUUID (getRandomValues on plain-http pages). */
  generateId?: () => string
}

/** Options of `insert`. */
/** Options of `update` and `delete`. */
export interface WriteOptions {
  /**
   * The revision of the record as the editor last saw it (the read-only
   * `revision` the server sends with it): the receiver then merges with what
   * others changed since, or answers with a conflict (see `conflicts()`).
   * Without it the write is last-writer-wins.
   */
  baseRevision?: number
}

export interface InsertOptions extends WriteOptions {
  /** The record's id; default `record.id`, else a new UUID. */
  recordId?: string
}

/**
 * The local-first outbox: queue writes durably, deliver them in batches, never twice. A write resolves once it
 * is in IndexedDB, whatever the network does; delivery, retries and other tabs are the client's business.
 *
 * @example
 * ```ts
 * const id = await client.insert('todos', { title: 'Write docs' }) // durable now, delivered when online
 * client.subscribe((s) => render(s.state, s.pending))
 * const { delivered, pending } = await client.flush() // deliver now instead of at the next interval
 * ```
 */
export interface SyncClient {
  /** Queues an insert (create or replace); resolves the recordId once committed to IndexedDB. */
  insert(collection: string, record: Record<string, unknown>, options?: InsertOptions): Promise<string>
  /** Queues an update with only the changed fields (merged shallowly). */
  update(collection: string, recordId: string, changes: Record<string, unknown>, options?: WriteOptions): Promise<void>
  /** Queues a delete (`{action: 'delete', collection, recordId}` on the wire). */
  delete(collection: string, recordId: string, options?: WriteOptions): Promise<void>
  /** Queues any operation; resolves its local outbox id. */
  enqueue(operation: Operation): Promise<number>
  /** Delivers now, ignoring backoff, until the queue is empty or a delivery fails. */
  flush(): Promise<FlushResult>
  /** Operations still to send, after compaction. */
  pending(): Promise<number>
  /** The current status, read fresh from IndexedDB. */
  status(): Promise<SyncStatus>
  /** All queued operations: the batch in flight first (with its batchId), then the rest, in order. */
  outbox(): Promise<OutboxEntry[]>
  /** Removes queued operations by local id (e.g. a poison operation); resolves how many were removed. */
  discard(ids: readonly number[]): Promise<number>
  /** Operations moved aside after a rejection (with `deadLetter: true`). */
  deadLetters(): Promise<DeadLetter[]>
  /** Deletes these dead letters, or all of them without `ids`. */
  clearDeadLetters(ids?: readonly number[]): Promise<void>
  /** Edits the receiver answered with a conflict (409), oldest first, until resolved. */
  conflicts(): Promise<Conflict[]>
  /**
   * Resolves a conflict: queues what the resolution sends (like any write, so
   * it works offline) and releases the edits of the record held behind it.
   * Throws `unknown_conflict` when it is gone (resolved in another tab) and
   * `invalid_resolution` when the resolution does not fit the conflict.
   */
  resolve(conflictId: number, resolution: ConflictResolution): Promise<void>
  /** Status changes and every outbox change, coalesced; the current status follows soon after subscribing. */
  subscribe(listener: StatusListener): () => void
  /** After each acknowledged batch, in every instance sharing the outbox (when BroadcastChannel exists). */
  onDelivered(listener: DeliveredListener): () => void
  /** Starts the background loop (a first pass right away, then every `syncIntervalMs`). */
  start(): void
  /** Stops the background loop; `flush()` still works. */
  stop(): void
  /**
   * The server is reachable again (e.g. a stream to it just came back): a
   * batch waiting out a network failure is retried now instead of at the end
   * of its backoff. Waits the server asked for (5xx, 429, Retry-After) stay.
   * The flag client calls this when its stream goes live.
   */
  retryNow(): void
  /** Stops, aborts a request on the wire, releases the delivery lock and closes the database. */
  close(): Promise<void>
}

/** `field`: someone else changed a field this edit sets; `deleted`: the record was deleted; `exists`: created by someone else. */
export type ConflictKind = 'field' | 'deleted' | 'exists'

/**
 * An edit the receiver refused because the record changed since the editor
 * saw it (a 409). Kept in IndexedDB (shared by tabs, kept across reloads)
 * until `resolve()`; later edits of the same record wait with it.
 */
export interface Conflict {
  /** Pass it to `resolve()`. */
  id: number
  /** The collection of the conflicting record. */
  collection: string
  /** The conflicting record's id. */
  recordId: string
  /** How the edit and the server's state collide; see `ConflictKind`. */
  kind: ConflictKind
  /** The fields both sides changed (`field`), or what the others changed. */
  fields: string[]
  /** My edit as it was sent (several queued edits of the record compacted into one). */
  mine: Operation
  /** The record as I last saw it (at the base revision); null where absent or no longer known. */
  base: Record<string, unknown> | null
  /** The record now (theirs); null when deleted. */
  current: Record<string, unknown> | null
  /** The record's revision on the server now: the base a resolution's write is checked against. Null when unknown. */
  currentRevision: number | null
  /** The receiver's words for it. */
  reason: string
  /** The batch that came back with the conflict. */
  batchId: string
  /** Epoch ms of the 409. */
  detectedAt: number
}

/**
 * - `'mine'`: send my edit again on top of the record as it is now (its current revision as the new base);
 * - `'theirs'`: drop my edit;
 * - `'recreate'` (kind `deleted` only): create the record again from what I saw with my changes on top;
 * - `{ record }`: a merged record (all fields the record should have), sent on top of the current one.
 */
export type ConflictResolution = 'mine' | 'theirs' | 'recreate' | { record: Record<string, unknown> }
