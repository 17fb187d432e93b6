export { applyPending } from './apply-pending.js'
export { createFlagClient } from './flag-client.js'
export { isNewerFlagSet } from './flag-sets.js'
export { BOOTSTRAP_COMPLETE_COMMENT, DEFAULT_RECONNECT } from './flag-stream.js'
export type { ImpressionQueue, QueuedImpression } from './impressions/impression-queue.js'
export { MemoryImpressionQueue } from './impressions/impression-queue.js'
export {
  IMPRESSION_DEFAULTS,
  IMPRESSION_WIRE_LIMITS,
  wireUserId,
  wireValue,
} from './impressions/impression-reporter.js'
export { DexieImpressionQueue, IndexedDbImpressionQueue } from './impressions/indexeddb-queue.js'
export type { ManualOnlineSource } from './online.js'
export { browserOnlineSource, manualOnlineSource } from './online.js'
export { FlagsyncProvider } from './openfeature-provider.js'
export { StreamHttpError } from './read-event-stream.js'
export { createRemoteFlagClient } from './remote/remote-client.js'
export type { RemoteFlagClient, RemoteFlagClientOptions } from './remote/remote-types.js'
export type {
  ClientFlag,
  Clock,
  FlagClient,
  FlagClientEvent,
  FlagClientListener,
  FlagClientOptions,
  FlagClientStatus,
  FlagConflict,
  FlagEvaluation,
  FlagOutbox,
  FlagSource,
  ImpressionOptions,
  ImpressionStatus,
  KeyValueStorage,
  OnlineSource,
} from './types.js'
