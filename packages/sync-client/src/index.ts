// The backoff is shared with every retrying flagsync client; re-exported for convenience.

// Live flags (stream, cache, local-first view, OpenFeature) come from @flagsync/flag-client, exported here too
// so an app needs one package for both halves.
export {
  applyPending,
  browserOnlineSource,
  type ClientFlag,
  createFlagClient,
  type FlagClient,
  type FlagClientEvent,
  type FlagClientListener,
  type FlagClientOptions,
  type FlagClientStatus,
  type FlagEvaluation,
  type FlagOutbox,
  type FlagSource,
  FlagsyncProvider,
  type ManualOnlineSource,
  manualOnlineSource,
  StreamHttpError,
} from '@flagsync/flag-client'
export {
  computeBackoff,
  DEFAULT_RETRY_POLICY,
  parseRetryAfter,
  type RetryPolicy,
  retryDelay,
} from '@flagsync/protocol'
export { type CompactOptions, compact, compactRecord } from './compact.js'
export { isQuotaError, SyncClientError, type SyncClientErrorCode, toSyncClientError } from './errors.js'
export { DEFAULTS } from './resolve-options.js'
export { createSyncClient } from './sync-client.js'
export type {
  BroadcastChannelFactory,
  BroadcastChannelLike,
  Clock,
  Conflict,
  ConflictKind,
  ConflictResolution,
  DeadLetter,
  DeliveredListener,
  DeliveryError,
  DeliveryInfo,
  FlushResult,
  HeadersOption,
  InsertOptions,
  LockManagerLike,
  OnlineSource,
  OutboxEntry,
  StatusListener,
  SyncClient,
  SyncClientOptions,
  SyncState,
  SyncStatus,
  WriteOptions,
} from './types.js'
