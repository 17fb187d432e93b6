import type { SyncClientError } from './errors.js'
import type { toJsonObject } from './normalize-operation.js'
import type { decodeBatch, recordKey } from './outbox-schema.js'
import type { addRemoteRows, FILTER_PROBES, hashes, ROW_KEYS, remoteRows } from './remote-records.js'

// Its own module so the lazy modules can name it without importing lazy-ops.ts, which imports them.

/** What the lazy chunk uses from the modules every page loads up front, handed in by `loadLazyOps`. */
export interface LazyKit {
  addRemoteRows: typeof addRemoteRows
  decodeBatch: typeof decodeBatch
  FILTER_PROBES: typeof FILTER_PROBES
  hashes: typeof hashes
  recordKey: typeof recordKey
  remoteRows: typeof remoteRows
  ROW_KEYS: typeof ROW_KEYS
  SyncClientError: typeof SyncClientError
  toJsonObject: typeof toJsonObject
}
