import type { Operation } from '@flagsync/protocol'
import { Dexie, type Table } from 'dexie'
import { compact, compactRecord } from './compact.js'
import { SyncClientError } from './errors.js'
import type { DeadLetter, DeliveryError, OutboxEntry } from './types.js'

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
  /** Records whose last consumed operation is a delete (an update or delete of them is refused). */
  deletedKeys: string[]
  attempts: number
  nextAttemptAt: number
  lastError: DeliveryError | null
  /** Epoch ms until which an attempt may be on the wire; 0 when none is. */
  sendingUntil: number
  createdAt: number
}

interface LeaseRow {
  name: string
  owner: string
  expiresAt: number
}

/** A record this outbox has delivered and not deleted since: it exists at the receiver. */
interface RemoteRecordRow {
  key: string
}

interface DeadLetterRow {
  id?: number
  batchId: string
  operation: Operation
  sources: StoredOp[]
  error: DeliveryError
  deadAt: number
}

type OutboxDexie = Dexie & {
  ops: Table<StoredOp | Omit<StoredOp, 'id'>, number>
  batches: Table<BatchRow, number>
  lease: Table<LeaseRow, string>
  deadLetters: Table<DeadLetterRow, number>
  remoteRecords: Table<RemoteRecordRow, string>
}

const RECORD_INDEX = '[op.collection+op.recordId]'
const LEASE_NAME = 'delivery'

/** Unambiguous key of one record (a separator character could appear in names). */
export function recordKey(op: Pick<Operation, 'collection' | 'recordId'>): string {
  return JSON.stringify([op.collection, op.recordId])
}

export interface OutboxDeps {
  indexedDB: IDBFactory
  IDBKeyRange: typeof IDBKeyRange
}

/**
 * The outbox in IndexedDB (through Dexie): `ops` holds queued operations not
 * yet in a batch, `batches` the batch being delivered (at most one), `lease`
 * the delivery lease used without Web Locks, `deadLetters` rejected operations,
 * `remoteRecords` the records this outbox delivered and has not deleted since
 * (an insert … delete of those must still send the delete).
 */
export class OutboxDb {
  readonly db: OutboxDexie

  constructor(name: string, deps: OutboxDeps) {
    const db = new Dexie(name, { indexedDB: deps.indexedDB, IDBKeyRange: deps.IDBKeyRange }) as OutboxDexie
    db.version(1).stores({
      ops: `++id, ${RECORD_INDEX}`,
      batches: '++seq, &batchId, *deletedKeys',
      lease: 'name',
      deadLetters: '++id, batchId',
      remoteRecords: 'key',
    })
    this.db = db
  }

  close(): void {
    this.db.close()
  }

  /**
   * Appends one operation in a single small transaction. An update or delete
   * of a record whose last queued operation is a delete is refused inside the
   * same transaction, so two tabs cannot race past the check.
   */
  enqueue(op: Operation, now: number): Promise<number> {
    const { db } = this
    return db.transaction('rw', db.ops, db.batches, async () => {
      if (op.action !== 'insert') {
        const last = await db.ops.where(RECORD_INDEX).equals([op.collection, op.recordId]).last()
        const deleted =
          last !== undefined
            ? last.op.action === 'delete'
            : (await db.batches.where('deletedKeys').equals(recordKey(op)).count()) > 0
        if (deleted) {
          throw new SyncClientError(
            'invalid_operation',
            `cannot ${op.action} ${op.collection}/${op.recordId}: a delete of this record is already queued (insert it again first)`,
          )
        }
      }
      return (await db.ops.add({ op, queuedAt: now })) as number
    })
  }

  /** The batch being delivered, if any. */
  head(): Promise<BatchRow | undefined> {
    return this.db.batches.toCollection().first()
  }

  /**
   * The batch to deliver next: the persisted one when there is one, else a new
   * one cut from the queue. Cutting compacts in one transaction: records are
   * taken in order of first appearance, each with all of its queued operations
   * (full compaction per record), until `batchSize` operations are selected.
   * Records that cancel out are consumed without being sent.
   */
  nextBatch(batchSize: number, newBatchId: () => string, now: number): Promise<BatchRow | undefined> {
    const { db } = this
    return db.transaction('rw', db.ops, db.batches, db.remoteRecords, async () => {
      const existing = await db.batches.toCollection().first()
      if (existing) return existing
      const seen = new Set<string>()
      const operations: Operation[] = []
      const sourceIds: number[][] = []
      const sources: StoredOp[] = []
      const deletedKeys: string[] = []
      const pageSize = Math.max(64, batchSize * 2)
      let afterId = 0
      scan: for (;;) {
        const page = (await db.ops.where(':id').above(afterId).limit(pageSize).toArray()) as StoredOp[]
        const lastRow = page[page.length - 1]
        if (lastRow === undefined) break
        afterId = lastRow.id
        const firstOfRecord = page.filter((row) => {
          const key = recordKey(row.op)
          if (seen.has(key)) return false
          seen.add(key)
          return true
        })
        const runs = await Promise.all(
          firstOfRecord.map(async (row) => ({
            rows: (await db.ops
              .where(RECORD_INDEX)
              .equals([row.op.collection, row.op.recordId])
              .toArray()) as StoredOp[],
            remote: row.op.action === 'insert' && (await db.remoteRecords.get(recordKey(row.op))) !== undefined,
          })),
        )
        for (const { rows: run, remote } of runs) {
          for (const row of run) sources.push(row)
          const last = run[run.length - 1]
          if (last?.op.action === 'delete') deletedKeys.push(recordKey(last.op))
          const compacted = compactRecord(
            run.map((row) => row.op),
            remote,
          )
          if (compacted === null) continue
          operations.push(compacted)
          sourceIds.push(run.map((row) => row.id))
          if (operations.length >= batchSize) break scan
        }
      }
      if (sources.length === 0) return undefined
      await db.ops.bulkDelete(sources.map((row) => row.id))
      // Everything cancelled out (insert … delete): nothing to send, and the scan reached the end.
      if (operations.length === 0) return undefined
      const batch: BatchRow = {
        batchId: newBatchId(),
        operations,
        sourceIds,
        sources,
        deletedKeys,
        attempts: 0,
        nextAttemptAt: 0,
        lastError: null,
        sendingUntil: 0,
        createdAt: now,
      }
      batch.seq = await db.batches.add(batch)
      return batch
    })
  }

  /** Marks an attempt as on the wire; false when the batch is gone (discarded meanwhile). */
  async markSending(batchId: string, until: number): Promise<boolean> {
    return (await this.db.batches.where('batchId').equals(batchId).modify({ sendingUntil: until })) > 0
  }

  /**
   * After a 2xx: removes the batch and with it exactly the operations it
   * consumed, and remembers which records now exist at the receiver.
   */
  complete(batchId: string): Promise<number> {
    const { db } = this
    return db.transaction('rw', db.batches, db.remoteRecords, async () => {
      const batch = await db.batches.where('batchId').equals(batchId).first()
      if (!batch) return 0
      const created = new Set<string>()
      const deleted = new Set<string>()
      for (const op of batch.operations) {
        const key = recordKey(op)
        if (op.action === 'delete') {
          deleted.add(key)
          created.delete(key)
        } else {
          created.add(key)
          deleted.delete(key)
        }
      }
      if (deleted.size > 0) await db.remoteRecords.bulkDelete([...deleted])
      if (created.size > 0) await db.remoteRecords.bulkPut([...created].map((key) => ({ key })))
      await db.batches.delete(batch.seq as number)
      return 1
    })
  }

  /** After a failed attempt: counts it and schedules the next one. Returns the updated batch. */
  recordFailure(
    batchId: string,
    error: DeliveryError,
    delayFor: (attempt: number) => number,
    now: number,
  ): Promise<BatchRow | undefined> {
    const { db } = this
    return db.transaction('rw', db.batches, async () => {
      const row = await db.batches.where('batchId').equals(batchId).first()
      if (!row) return undefined
      row.attempts += 1
      row.nextAttemptAt = now + delayFor(row.attempts - 1)
      row.lastError = error
      row.sendingUntil = 0
      await db.batches.put(row)
      return row
    })
  }

  /** The attempt ended without an answer worth counting (aborted by close). */
  async clearSending(batchId: string): Promise<void> {
    await this.db.batches.where('batchId').equals(batchId).modify({ sendingUntil: 0 })
  }

  /** Back to a fresh schedule (the browser came back online); the error stays until a success. */
  async resetBackoff(): Promise<void> {
    await this.db.batches.toCollection().modify({ attempts: 0, nextAttemptAt: 0 })
  }

  /**
   * Moves rejected operations to the dead-letter store: only the one the
   * receiver named (`operationIndex`) when it did, else the whole batch. The
   * batch is dropped; operations not moved go back to the queue and are cut
   * into a new batch with a new id (the receiver applied nothing of the
   * rejected one).
   */
  deadLetter(batchId: string, error: DeliveryError, now: number): Promise<number> {
    const { db } = this
    return db.transaction('rw', db.ops, db.batches, db.deadLetters, async () => {
      const row = await db.batches.where('batchId').equals(batchId).first()
      if (!row) return 0
      const index = error.operationIndex
      const named = index !== undefined && index >= 0 && index < row.operations.length ? index : undefined
      const moved = named === undefined ? row.operations.map((_, i) => i) : [named]
      const movedIds = new Set<number>()
      for (const i of moved) for (const id of row.sourceIds[i] ?? []) movedIds.add(id)
      await db.deadLetters.bulkAdd(
        moved.map((i) => ({
          batchId,
          operation: row.operations[i] as Operation,
          sources: row.sources.filter((s) => (row.sourceIds[i] ?? []).includes(s.id)),
          error,
          deadAt: now,
        })),
      )
      await db.batches.delete(row.seq as number)
      if (named !== undefined) await db.ops.bulkPut(row.sources.filter((s) => !movedIds.has(s.id)))
      return moved.length
    })
  }

  /**
   * Removes queued operations by local id. Ids inside the current batch are
   * only removable while that batch is safe to change: never attempted, or
   * rejected by the receiver (so not applied). The batch is then dropped and
   * its other operations go back to the queue, to be cut again under a new
   * batchId. Resolves 'busy' while an attempt may be on the wire.
   */
  discard(ids: readonly number[], now: number): Promise<number | 'busy'> {
    const { db } = this
    const wanted = new Set(ids)
    return db.transaction('rw', db.ops, db.batches, async () => {
      let removed = 0
      const batch = await db.batches.toCollection().first()
      if (batch?.sources.some((s) => wanted.has(s.id))) {
        if (batch.sendingUntil > now) return 'busy'
        if (batch.attempts > 0 && batch.lastError?.kind !== 'rejected') {
          throw new SyncClientError(
            'invalid_operation',
            `cannot discard: batch ${batch.batchId} was sent and may have been applied; only operations of a rejected (blocked) or unsent batch can be discarded`,
          )
        }
        const keep = batch.sources.filter((s) => !wanted.has(s.id))
        removed += batch.sources.length - keep.length
        await db.batches.delete(batch.seq as number)
        await db.ops.bulkPut(keep)
      }
      const queued = (await db.ops.bulkGet([...wanted])).filter((row) => row !== undefined)
      await db.ops.bulkDelete(queued.map((row) => (row as StoredOp).id))
      return removed + queued.length
    })
  }

  /** All queued operations: the batch in flight first, then the rest in queue order. */
  outbox(): Promise<OutboxEntry[]> {
    const { db } = this
    return db.transaction('r', db.ops, db.batches, async () => {
      const entries: OutboxEntry[] = []
      for (const batch of await db.batches.toArray()) {
        for (const s of batch.sources)
          entries.push({ id: s.id, operation: s.op, batchId: batch.batchId, queuedAt: s.queuedAt })
      }
      for (const row of (await db.ops.toArray()) as StoredOp[]) {
        entries.push({ id: row.id, operation: row.op, batchId: null, queuedAt: row.queuedAt })
      }
      return entries
    })
  }

  /** The head batch and the number of operations still to send, after compaction. */
  snapshot(): Promise<{ head: BatchRow | undefined; pending: number }> {
    const { db } = this
    return db.transaction('r', db.ops, db.batches, db.remoteRecords, async () => {
      const head = await db.batches.toCollection().first()
      const queued = ((await db.ops.toArray()) as StoredOp[]).map((row) => row.op)
      const inBatches = (await db.batches.toArray()).reduce((sum, b) => sum + b.operations.length, 0)
      // Only records whose run starts with an insert need the remote check.
      const firstInserts = new Set<string>()
      const seen = new Set<string>()
      for (const op of queued) {
        const key = recordKey(op)
        if (seen.has(key)) continue
        seen.add(key)
        if (op.action === 'insert') firstInserts.add(key)
      }
      const keys = [...firstInserts]
      const found = await db.remoteRecords.bulkGet(keys)
      const remote = new Set(keys.filter((_, i) => found[i] !== undefined))
      const compacted = compact(queued, {
        existsRemotely: (c, r) => remote.has(recordKey({ collection: c, recordId: r })),
      })
      return { head, pending: inBatches + compacted.length }
    })
  }

  async deadLetters(): Promise<DeadLetter[]> {
    const rows = await this.db.deadLetters.toArray()
    return rows.map((row) => ({
      id: row.id as number,
      batchId: row.batchId,
      operation: row.operation,
      error: row.error,
      deadAt: row.deadAt,
    }))
  }

  async clearDeadLetters(ids?: readonly number[]): Promise<void> {
    if (ids === undefined) await this.db.deadLetters.clear()
    else await this.db.deadLetters.bulkDelete([...ids])
  }

  /** Takes or renews the delivery lease; false while another live instance holds it. */
  acquireLease(owner: string, now: number, durationMs: number): Promise<boolean> {
    const { db } = this
    return db.transaction('rw', db.lease, async () => {
      const lease = await db.lease.get(LEASE_NAME)
      if (lease && lease.owner !== owner && lease.expiresAt > now) return false
      await db.lease.put({ name: LEASE_NAME, owner, expiresAt: now + durationMs })
      return true
    })
  }

  releaseLease(owner: string): Promise<void> {
    const { db } = this
    return db.transaction('rw', db.lease, async () => {
      const lease = await db.lease.get(LEASE_NAME)
      if (lease?.owner === owner) await db.lease.delete(LEASE_NAME)
    })
  }
}
