import type { Operation } from '@flagsync/protocol'
import { Dexie } from 'dexie'
import { compact } from './compact.js'
import { cutBatch } from './cut-batch.js'
import { SyncClientError } from './errors.js'
import {
  type BatchRow,
  clearTombstonesOf,
  type OutboxDeps,
  type OutboxDexie,
  recomputeTombstones,
  recordKey,
  type StoredOp,
} from './outbox-schema.js'
import type { DeadLetter, DeliveryError, OutboxEntry } from './types.js'

export type { BatchRow, StoredOp } from './outbox-schema.js'

/**
 * The outbox in IndexedDB (through Dexie):
 * - `ops`: queued operations not yet in a batch, keyed by a monotonic local id;
 * - `batches`: the batch being delivered (at most one);
 * - `tombstones`: records whose last queued operation is a delete;
 * - `remoteRecords`: records this outbox delivered and has not deleted since
 *   (an insert … delete of those must still send the delete);
 * - `lease`: the delivery lease used without Web Locks;
 * - `deadLetters`: rejected operations moved aside (opt-in).
 */
const LEASE_NAME = 'delivery'

export class OutboxDb {
  readonly db: OutboxDexie

  constructor(name: string, deps: OutboxDeps) {
    const db = new Dexie(name, { indexedDB: deps.indexedDB, IDBKeyRange: deps.IDBKeyRange }) as OutboxDexie
    db.version(1).stores({
      ops: '++id',
      batches: '++seq, &batchId',
      tombstones: 'key',
      remoteRecords: 'key',
      lease: 'name',
      deadLetters: '++id, batchId',
    })
    this.db = db
  }

  close(): void {
    this.db.close()
  }

  /**
   * Appends one operation in a single small transaction. An update or delete
   * of a record with a queued delete is refused inside the same transaction
   * (one point read of `tombstones`), so two tabs cannot race past the check.
   */
  enqueue(op: Operation, now: number): Promise<number> {
    const { db } = this
    return db.transaction('rw', db.ops, db.tombstones, async () => {
      const key = recordKey(op)
      if (op.action !== 'insert' && (await db.tombstones.get(key)) !== undefined) {
        throw new SyncClientError(
          'invalid_operation',
          `cannot ${op.action} ${op.collection}/${op.recordId}: a delete of this record is already queued (insert it again first)`,
        )
      }
      const id = (await db.ops.add({ op, queuedAt: now })) as number
      if (op.action === 'delete') await db.tombstones.put({ key, opId: id })
      else if (op.action === 'insert') await db.tombstones.delete(key)
      return id
    })
  }

  /** The batch being delivered, if any. */
  head(): Promise<BatchRow | undefined> {
    return this.db.batches.toCollection().first()
  }

  /**
   * The batch to deliver next: the persisted one when there is one, else a
   * new one cut from the queue (see `cutBatch`) in the same transaction.
   */
  nextBatch(batchSize: number, newBatchId: () => string, now: number): Promise<BatchRow | undefined> {
    const { db } = this
    return db.transaction('rw', db.ops, db.batches, db.tombstones, db.remoteRecords, async () => {
      const existing = await db.batches.toCollection().first()
      if (existing) return existing
      return cutBatch(db, batchSize, newBatchId, now)
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
    return db.transaction('rw', db.batches, db.tombstones, db.remoteRecords, async () => {
      const batch = await db.batches.where('batchId').equals(batchId).first()
      if (!batch) return 0
      await clearTombstonesOf(db, batch.sources)
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
    return db.transaction('rw', db.ops, db.batches, db.tombstones, db.deadLetters, async () => {
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
      await recomputeTombstones(
        db,
        row.sources.filter((s) => movedIds.has(s.id)),
      )
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
    return db.transaction('rw', db.ops, db.batches, db.tombstones, async () => {
      const removed: StoredOp[] = []
      const batch = await db.batches.toCollection().first()
      if (batch?.sources.some((s) => wanted.has(s.id))) {
        if (batch.sendingUntil > now) return 'busy'
        if (batch.attempts > 0 && batch.lastError?.kind !== 'rejected') {
          throw new SyncClientError(
            'invalid_operation',
            `cannot discard: batch ${batch.batchId} was sent and may have been applied; only operations of a rejected (blocked) or unsent batch can be discarded`,
          )
        }
        for (const s of batch.sources) if (wanted.has(s.id)) removed.push(s)
        await db.batches.delete(batch.seq as number)
        await db.ops.bulkPut(batch.sources.filter((s) => !wanted.has(s.id)))
      }
      for (const row of await db.ops.bulkGet([...wanted])) if (row) removed.push(row as StoredOp)
      await db.ops.bulkDelete([...wanted])
      await recomputeTombstones(db, removed)
      return removed.length
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
      // Batches are never re-compacted: count what they send, plus the compacted rest.
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
