import type { Operation } from '@flagsync/protocol'
import { Dexie } from 'dexie'
import { heldKeys } from './conflict-store.js'
import { type CutOptions, compactQueued, cutBatch, EMPTY_VIEW, type QueueView, STALE_VIEW } from './cut-batch.js'
import { DEFAULT_DURABILITY, transactionOptions } from './durability.js'
import { closedError, SyncClientError } from './errors.js'
import { lazyNow, withLazy } from './lazy.js'
import {
  type BatchRow,
  clearTombstonesOf,
  decodeBatch,
  type OutboxDeps,
  type OutboxDexie,
  recordKey,
  type StoredBatchRow,
  type StoredOp,
  type TombstoneRow,
} from './outbox-schema.js'
import { addRemoteRows, foldDue, recordDelivered, remoteRows } from './remote-records.js'
import type { Conflict, DeliveryError, OutboxEntry } from './types.js'

export { type CutOptions, EMPTY_VIEW } from './cut-batch.js'
export type { BatchRow } from './outbox-schema.js'

export interface NextBatch {
  batch: BatchRow | undefined
  /** The view of the queue for the next cut of this drain. */
  view: QueueView
  /** Cut by this call (not a persisted batch read back). */
  fresh: boolean
}

/**
 * The outbox in IndexedDB (through Dexie):
 * - `ops`: queued operations not yet in a batch, keyed by a monotonic local id;
 * - `batches`: the batch being delivered (at most one);
 * - `tombstones`: records whose last queued operation is a delete;
 * - `remoteKeys`: records this outbox delivered and has not deleted since
 *   (an insert … delete of those must still send the delete), one row per
 *   acknowledged batch, folded from time to time (see `remote-records.ts`);
 * - `lease`: the delivery lease used without Web Locks (see `lease-lock.ts`);
 * - `deadLetters`: rejected operations moved aside (opt-in);
 * - `conflicts`: operations answered with a 409, until resolved (see `conflict-store.ts`).
 *
 * What takes operations out of the middle of the queue (`discard`, `deadLetter`, conflicts), the lease and the fold
 * of `remoteKeys` are in the lazy chunk (lazy-ops.ts): loaded before their transaction opens.
 */

export class OutboxDb {
  readonly db: OutboxDexie
  /** Rows `remoteKeys` had after this instance's last fold (0: none yet). */
  #remoteRowsAfterFold = 0
  #closed = false
  /** `db.open()` started by `enqueue`, until it settles. */
  #opening: Promise<void> | null = null
  /**
   * The connection `db.open()` resolved with. Dexie reports itself open (`isOpen()`, `backendDB()`) from the start
   * of its upgrade, and a transaction of our own on that connection throws InvalidStateError until the upgrade is
   * over: the direct path of `enqueue` takes only this one.
   */
  #ready: IDBDatabase | null = null
  readonly #txOptions: IDBTransactionOptions | undefined

  constructor(name: string, deps: OutboxDeps) {
    const durability = deps.durability ?? DEFAULT_DURABILITY
    this.#txOptions = transactionOptions(durability)
    const db = new Dexie(name, {
      indexedDB: deps.indexedDB,
      IDBKeyRange: deps.IDBKeyRange,
      chromeTransactionDurability: durability,
    }) as OutboxDexie
    db.version(1).stores({
      ops: '++id',
      batches: '++seq, &batchId',
      tombstones: 'key',
      remoteRecords: 'key',
      lease: 'name',
      deadLetters: '++id, batchId',
    })
    // Version 2: one remoteKeys row per acknowledged batch instead of one remoteRecords row per record. The records
    // an earlier version knew to exist remotely move over as rows of ROW_KEYS keys.
    db.version(2)
      .stores({ remoteRecords: null, remoteKeys: '++id', remoteFilters: 'id' })
      .upgrade(async (tx) => {
        const keys = (await tx.table('remoteRecords').toCollection().primaryKeys()) as string[]
        await addRemoteRows({ remoteKeys: tx.table('remoteKeys') }, remoteRows(keys))
      })
    // Version 3: conflicts, indexed by record key (the cut holds that record's queued operations).
    db.version(3).stores({ conflicts: '++id, key' })
    // liveQuery support: an AbortController and a cross-context broadcast per read-write transaction. Nothing
    // observes this private database through Dexie (the client has its own change notification), so drop it.
    db.unuse({ stack: 'dbcore', name: 'Cache' })
    db.unuse({ stack: 'dbcore', name: 'Observability' })
    this.db = db
  }

  close(): void {
    this.#closed = true
    this.db.close()
  }

  /**
   * Appends one operation in a single read-write transaction of `ops` and
   * `tombstones`. An update or delete of a record with a queued delete is
   * refused inside that transaction (the tombstone read aborts it, add and
   * all), so two tabs cannot race past the check. Resolves the local id once
   * the transaction has committed.
   *
   * Native IndexedDB, not Dexie: the tombstone read and the add go out
   * together, without a round trip between them, and no library promise or
   * zone sits on the hot path of every write (see bench `browser.enqueue`).
   */
  enqueue(op: Operation, now: number): Promise<number> {
    if (this.#closed) return Promise.reject(closedError())
    const { db } = this
    if (this.#opening === null && db.isOpen() && db.backendDB() === this.#ready) {
      return appendOp(this.#ready, op, now, this.#txOptions)
    }
    // Every write made before the database is open waits on one promise, so they queue in call order.
    if (this.#opening === null) {
      const opening = db.open().then(() => {
        this.#ready = db.backendDB()
      })
      const done = () => {
        if (this.#opening === opening) this.#opening = null
      }
      opening.then(done, done)
      this.#opening = opening
    }
    return this.#opening.then(() => {
      if (this.#closed) throw closedError()
      return appendOp(db.backendDB(), op, now, this.#txOptions)
    })
  }

  /**
   * The batch to deliver after the one numbered `after` (null: the first):
   * a persisted one when there is one, else a new one cut from the queue (see
   * `cutBatch`) in the same transaction. `fresh` says it was cut here.
   */
  nextBatch(after: number | null, cut: CutOptions): Promise<NextBatch> {
    return withLazy(async () => {
      try {
        return await this.#nextBatchOnce(after, cut)
      } catch (error) {
        if (error !== STALE_VIEW) throw error
        return this.#nextBatchOnce(after, { ...cut, view: EMPTY_VIEW })
      }
    })
  }

  #nextBatchOnce(after: number | null, cut: CutOptions): Promise<NextBatch> {
    const { db } = this
    const tables = [db.ops, db.batches, db.tombstones, db.remoteKeys, db.remoteFilters, db.conflicts]
    return db.transaction('rw', tables, async () => {
      const batches = after === null ? db.batches.toCollection() : db.batches.where(':id').above(after)
      const existing = await batches.first()
      if (existing) return { batch: decodeBatch(existing), view: cut.view, fresh: false }
      return { ...(await cutBatch(db, cut)), fresh: true }
    })
  }

  /**
   * Sets attempt bookkeeping of the batch `batchId`; resolves 1, or 0 when it is gone (discarded meanwhile). The
   * pipeline marks an attempt as on the wire (`{sendingUntil, sent: true}`), a batch cut to go next that never left
   * (`{sendingUntil: 0, sent: false}`: its operations may be discarded again), and an attempt aborted by close
   * (`{sendingUntil: 0}`).
   */
  setBatch(batchId: string, fields: Pick<Partial<BatchRow>, 'sendingUntil' | 'sent'>): Promise<number> {
    return this.db.batches.where('batchId').equals(batchId).modify(fields)
  }

  /**
   * After a 2xx: removes the batch and with it exactly the operations it
   * consumed, and remembers which records now exist at the receiver (one
   * `remoteKeys` row for the batch, and now and then a fold). Takes the
   * batch as it was sent (its row never changes but for attempt bookkeeping)
   * instead of reading the whole row back.
   */
  complete(batch: BatchRow): Promise<number> {
    const { db } = this
    const seq = batch.seq as number
    return withLazy(() =>
      db.transaction('rw', db.batches, db.tombstones, db.remoteKeys, db.remoteFilters, async () => {
        if ((await db.batches.where(':id').equals(seq).count()) === 0) return 0
        await clearTombstonesOf(db, batch.sources)
        const rows = await recordDelivered(db, batch.operations)
        if (foldDue(rows, this.#remoteRowsAfterFold)) this.#remoteRowsAfterFold = await lazyNow().foldRemote(db)
        await db.batches.delete(seq)
        return 1
      }),
    )
  }

  /** After a failed attempt: counts it and schedules the next one. Returns the updated batch. */
  recordFailure(
    batchId: string,
    error: DeliveryError,
    delayFor: (attempt: number) => number,
    now: number,
  ): Promise<StoredBatchRow | undefined> {
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

  /** All queued operations: the batch in flight first, then the rest in queue order. */
  outbox(): Promise<OutboxEntry[]> {
    const { db } = this
    return db.transaction('r', db.ops, db.batches, async () => {
      const entries: OutboxEntry[] = []
      for (const batch of (await db.batches.toArray()).map(decodeBatch)) {
        for (const s of batch.sources)
          entries.push({ id: s.id, operation: s.op, batchId: batch.batchId, queuedAt: s.queuedAt })
      }
      for (const row of (await db.ops.toArray()) as StoredOp[]) {
        entries.push({ id: row.id, operation: row.op, batchId: null, queuedAt: row.queuedAt })
      }
      return entries
    })
  }

  /**
   * The head batch, the number of operations still to send, after
   * compaction (not counting those held behind a conflict), and the number
   * of conflicts.
   */
  snapshot(): Promise<{ head: BatchRow | undefined; pending: number; conflicts: number }> {
    const { db } = this
    return withLazy(() =>
      db.transaction('r', [db.ops, db.batches, db.remoteKeys, db.remoteFilters, db.conflicts], async () => {
        const batches = (await db.batches.toArray()).map(decodeBatch)
        const head = batches[0]
        const held = await heldKeys(db)
        let queued = (await db.ops.toArray()) as StoredOp[]
        if (held.size > 0) queued = queued.filter((row) => !held.has(recordKey(row.op)))
        // Batches are never re-compacted: count what they send, plus the compacted rest.
        const inBatches = batches.reduce((sum, b) => sum + b.operations.length, 0)
        const runs = await compactQueued(db, queued)
        const pending = runs.reduce((sum, run) => (run.op ? sum + 1 : sum), inBatches)
        return { head, pending, conflicts: await db.conflicts.count() }
      }),
    )
  }

  /** Eager, unlike the rest of conflict handling: the flag client and the React bindings list conflicts on every status. */
  async conflicts(): Promise<Conflict[]> {
    return (await this.db.conflicts.toArray()).map(
      ({ key: _key, sources: _sources, ...conflict }) => conflict as Conflict,
    )
  }
}

/** See `OutboxDb.enqueue`: one transaction, every request issued before the first answer. */
function appendOp(
  idb: IDBDatabase,
  op: Operation,
  now: number,
  options: IDBTransactionOptions | undefined,
): Promise<number> {
  return new Promise((resolve, reject) => {
    const tx = idb.transaction(['ops', 'tombstones'], 'readwrite', options)
    const tombstones = tx.objectStore('tombstones')
    const key = recordKey(op)
    let refused: SyncClientError | undefined
    let id: number | undefined
    tx.oncomplete = () => resolve(id as number)
    tx.onabort = () => reject(refused ?? tx.error ?? new Error('IndexedDB transaction aborted'))
    // A request that throws while being issued (DataCloneError) rejects through the executor; nothing before it
    // writes (the add is the first write), so the transaction commits empty.
    if (op.action !== 'insert') {
      const found = tombstones.get(key)
      found.onsuccess = () => {
        if (found.result === undefined) return
        refused = new SyncClientError(
          'invalid_operation',
          `cannot ${op.action} ${op.collection}/${op.recordId}: a delete of this record is already queued (insert it again first)`,
        )
        tx.abort()
      }
    }
    const added = tx.objectStore('ops').add({ op, queuedAt: now } satisfies Omit<StoredOp, 'id'>)
    added.onsuccess = () => {
      id = added.result as number
      if (op.action === 'delete') tombstones.put({ key, opId: id } satisfies TombstoneRow)
    }
    if (op.action === 'insert') tombstones.delete(key)
  })
}
