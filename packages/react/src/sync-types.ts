import type { FlagConflict, FlagOutbox } from '@flagsync/flag-client'

// The sync client's types as the hooks return them, declared here so that `@flagsync/sync-client` stays an optional
// peer: an app without it installed type-checks these bindings too. A test holds each one equal to the sync client's.

/** An outbox operation (`Operation` of `@flagsync/protocol`), as the flag client's types carry it. */
type Operation = FlagConflict['mine']

/** A sync client's state: `idle`, `syncing`, `backoff`, `offline` or `blocked` (see `@flagsync/sync-client`). */
export type SyncState = 'idle' | 'syncing' | 'backoff' | 'offline' | 'blocked'

/** The sync client's last failed delivery (its `DeliveryError`). */
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
  /** The outbox ids of the queued operations the rejected operation was compacted from (for `discard()`). */
  outboxIds?: number[]
  /** The batch the error belongs to. */
  batchId: string
  /** Epoch ms of the failure. */
  at: number
}

/** What `useSyncStatus()` returns: the sync client's `SyncStatus`. */
export interface SyncStatus {
  /** What the client is doing now. */
  state: SyncState
  /** Operations still to send, after compaction. */
  pending: number
  /** The last delivery failure; cleared by the next successful delivery. */
  lastError: DeliveryError | null
  /** Epoch ms when the current batch is retried next; null when no retry is scheduled. */
  nextAttemptAt: number | null
  /** Edits the receiver answered with a conflict, waiting for `resolve()`. */
  conflicts: number
}

/** One queued operation, as `usePendingChanges()` returns it: the sync client's `OutboxEntry`. */
export interface OutboxEntry {
  /** Local id (monotonic); pass it to the sync client's `discard`. */
  id: number
  /** The operation as the app queued it (before compaction). */
  operation: Operation
  /** The batch it was cut into (in flight or waiting for a retry), or null while not yet batched. */
  batchId: string | null
  /** Epoch ms when the app queued it. */
  queuedAt: number
}

/** An edit the receiver refused as a conflict, as `useConflicts()` returns it: the sync client's `Conflict`. */
export type Conflict = FlagConflict

/**
 * What `<FlagsyncProvider syncClient>` takes: what `createSyncClient()` of
 * `@flagsync/sync-client` returns. The hooks read its status, outbox and
 * conflicts; a flag client the provider creates sends edits through it.
 */
export interface SyncClientLike extends FlagOutbox {
  /** Status changes and every outbox change; the current status follows soon after subscribing. */
  subscribe(listener: (status: SyncStatus) => void): () => void
  /** All queued operations: the batch in flight first, then the rest, in order. */
  outbox(): Promise<OutboxEntry[]>
  /** Edits the receiver answered with a conflict, oldest first, until resolved. */
  conflicts(): Promise<Conflict[]>
}
