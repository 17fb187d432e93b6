import type { SyncClientError } from './errors.js'
import type { toJsonObject } from './normalize-operation.js'
import type { decodeBatch, recordKey } from './outbox-schema.js'
import type { ROW_KEYS, remoteRows } from './remote-records.js'

// Its own module so the lazy modules can name it without importing lazy-ops.ts, which imports them.

/** What the lazy chunk uses from the modules every page loads up front, handed in by `loadLazyOps`. */
export interface LazyKit {
  decodeBatch: typeof decodeBatch
  recordKey: typeof recordKey
  remoteRows: typeof remoteRows
  ROW_KEYS: typeof ROW_KEYS
  SyncClientError: typeof SyncClientError
  toJsonObject: typeof toJsonObject
}
