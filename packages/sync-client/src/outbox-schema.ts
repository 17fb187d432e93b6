import type { Operation } from '@flagsync/protocol'
import type { Dexie, Table } from 'dexie'
import type { Durability } from './durability.js'
import type { DeliveryError } from './types.js'

/** A queued operation that is not part of a batch yet. */
export interface StoredOp {
  id: number
  op: Operation
  queuedAt: number
}

/**
 * A batch, cut and persisted before its first attempt. Its `batchId` and
 * `operations` never change, so a retry (in this tab, another tab or after a
 * reload) is the same request and the receiver's dedupe recognizes it.
 */
export interface BatchRow {
  seq?: number
  batchId: string
  /** The operations exactly as sent (compacted). */
  operations: Operation[]
  /** For each sent operation, the local ids of the queued operations it stands for. */
  sourceIds: number[][]
  /** Every queued operation the batch consumed, including pairs that cancelled out. */
  sources: StoredOp[]
  attempts: number
  nextAttemptAt: number
  lastError: DeliveryError | null
  /** Epoch ms until which an attempt may be on the wire; 0 when none is. */
  sendingUntil: number
  /**
   * True once the batch may have reached the receiver: set when an attempt is
   * about to start (or when the batch is cut to go out next), and cleared only
   * for a batch known never to have left. Absent on rows written by earlier
   * versions, where `attempts > 0` says the same.
   */
  sent?: boolean
  createdAt: number
  /** `operations` as JSON text, when known: the request body's, and what IndexedDB stores. */
  operationsJson?: string
}

type BatchContent = 'operations' | 'sourceIds' | 'sources' | 'operationsJson'

/**
 * A batch as IndexedDB holds it: the operations and the sources as JSON text,
 * which it copies in and out far faster than the same object graphs (the
 * batch never changes, and the operations text is the request body). Rows
 * written by earlier versions have the arrays instead.
 */
export type StoredBatchRow = Omit<BatchRow, BatchContent> &
  ({ operationsJson: string; sourcesJson: string } | Pick<BatchRow, 'operations' | 'sourceIds' | 'sources'>)

export function decodeBatch(row: StoredBatchRow): BatchRow {
  if (!('operationsJson' in row)) return row
  const { operationsJson, sourcesJson, ...bookkeeping } = row
  const { sourceIds, sources } = JSON.parse(sourcesJson) as Pick<BatchRow, 'sourceIds' | 'sources'>
  return { ...bookkeeping, operations: JSON.parse(operationsJson) as Operation[], sourceIds, sources, operationsJson }
}

interface LeaseRow {
  name: string
  owner: string
  expiresAt: number
}

/** A record whose last queued (unacknowledged) operation is a delete: updating or deleting it again is refused. */
export interface TombstoneRow {
  key: string
  /** The local id of that delete. */
  opId: number
}

/**
 * What acknowledged batches left at the receiver (see `remote-records.ts`):
 * `keys`, records that exist after them, and `gone`, records they deleted
 * (record keys). The newest row naming a record says whether it exists.
 */
export interface RemoteRow {
  id?: number
  keys: string[]
  gone: string[]
}

interface RemoteFilterRow {
  id: number
  bits: Uint32Array
}

interface DeadLetterRow {
  id?: number
  batchId: string
  operation: Operation
  sources: StoredOp[]
  error: DeliveryError
  deadAt: number
}

/** An operation the receiver answered with a conflict (409), kept until the app resolves it (see `conflicts.ts`). */
export interface ConflictRow {
  id?: number
  /** `recordKey` of the record: queued operations on it are held while the row exists. */
  key: string
  collection: string
  recordId: string
  kind: 'field' | 'deleted' | 'exists'
  fields: string[]
  /** The operation as sent (compacted), with the base it was sent with. */
  mine: Operation
  /** The queued operations it was compacted from. */
  sources: StoredOp[]
  base: Record<string, unknown> | null
  current: Record<string, unknown> | null
  currentRevision: number | null
  reason: string
  batchId: string
  detectedAt: number
}

export type OutboxDexie = Dexie & {
  ops: Table<StoredOp | Omit<StoredOp, 'id'>, number>
  batches: Table<StoredBatchRow, number>
  tombstones: Table<TombstoneRow, string>
  remoteKeys: Table<RemoteRow, number>
  /** A Bloom filter of a `remoteKeys` row's keys and gone keys, under the row's id, once a lookup or fold built it. */
  remoteFilters: Table<RemoteFilterRow, number>
  lease: Table<LeaseRow, string>
  deadLetters: Table<DeadLetterRow, number>
  conflicts: Table<ConflictRow, number>
}

/** Key of one record. Collection names cannot contain U+0000, so the separator is unambiguous. */
export function recordKey(op: Pick<Operation, 'collection' | 'recordId'>): string {
  return `${op.collection}\u0000${op.recordId}`
}

/** Whether each record the operations touch exists after them at the receiver (the last operation wins). */
export function existenceAfter(operations: readonly Operation[]): Map<string, boolean> {
  const exists = new Map<string, boolean>()
  for (const op of operations) exists.set(recordKey(op), op.action !== 'delete')
  return exists
}

export interface OutboxDeps {
  indexedDB: IDBFactory
  IDBKeyRange: typeof IDBKeyRange
  /** Of every read-write transaction; default `DEFAULT_DURABILITY`. */
  durability?: Durability
}

/** After the deletes among `sources` are acknowledged or dropped: their records no longer have a queued delete. */
export async function clearTombstonesOf(db: OutboxDexie, sources: readonly StoredOp[]): Promise<void> {
  const deletes = sources.filter((s) => s.op.action === 'delete')
  if (deletes.length === 0) return
  const keys = deletes.map((s) => recordKey(s.op))
  const found = await db.tombstones.bulkGet(keys)
  const ids = new Set(deletes.map((s) => s.id))
  const stale = found.filter((t): t is TombstoneRow => t !== undefined && ids.has(t.opId)).map((t) => t.key)
  if (stale.length > 0) await db.tombstones.bulkDelete(stale)
}
