export { computeBackoff, DEFAULT_RETRY_POLICY, parseRetryAfter, retryDelay } from './backoff.js'
export { type CompactOptions, compact, compactRecord } from './compact.js'
export { isQuotaError, SyncClientError, type SyncClientErrorCode, toSyncClientError } from './errors.js'
export { browserOnlineSource, type ManualOnlineSource, manualOnlineSource } from './online.js'
export { DEFAULTS } from './resolve-options.js'
export { createSyncClient, type InsertOptions, type SyncClient } from './sync-client.js'
export type {
  BroadcastChannelFactory,
  BroadcastChannelLike,
  Clock,
  DeadLetter,
  DeliveredListener,
  DeliveryError,
  FlushResult,
  HeadersOption,
  LockManagerLike,
  OnlineSource,
  OutboxEntry,
  RetryPolicy,
  StatusListener,
  SyncClientOptions,
  SyncState,
  SyncStatus,
} from './types.js'
