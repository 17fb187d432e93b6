// The backoff is shared with every retrying flagsync client; re-exported for convenience.
export {
  computeBackoff,
  DEFAULT_RETRY_POLICY,
  parseRetryAfter,
  type RetryPolicy,
  retryDelay,
} from '@flagsync/protocol'
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
  StatusListener,
  SyncClientOptions,
  SyncState,
  SyncStatus,
} from './types.js'
