/** @public Structural equality of JSON values, as the conflict check compares fields (protocol's `jsonEqual`). */
export { jsonEqual as deepEqual } from '@flagsync/protocol'
// The three-way check a custom collection may run (see the README's conflicts section); its home is the store.
export type { ConflictCheck, ConflictKind, ConflictVerdict } from '@flagsync/store'
export { detectConflict } from '@flagsync/store'
export type { BatchConflict, BatchOutcome, ConflictMode } from './apply-batch.js'
export type { Collection, CollectionContext, OperationMeta } from './collection.js'
export { flagsCollection } from './flags-collection.js'
export { assertRecordKey, flatFlagModel } from './flat-flag-model.js'
export type { ConflictReport } from './operation-conflict.js'
export { OperationConflict } from './operation-conflict.js'
export { OperationRejected } from './operation-rejected.js'
export type { Receiver, ReceiverOptions } from './receiver.js'
export { createReceiver, DEFAULT_BATCH_RETENTION_MS } from './receiver.js'
export type {
  ReceiverAppOptions,
  ReceiverServer,
  ReceiverServerConfig,
  ReceiverServerExtras,
} from './receiver-server.js'
/** @public `ConfigError` is what `loadReceiverConfig` throws for a bad setting, apart from other errors. */
export { ConfigError, createReceiverApp, loadReceiverConfig, startReceiverServer } from './receiver-server.js'
export type { TableCollectionOptions } from './table-collection.js'
export { tableCollection } from './table-collection.js'
