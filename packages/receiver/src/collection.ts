import type { BaseStates, FlagStore, FlagWriter } from '@flagsync/store'
import type { Knex } from 'knex'

export interface CollectionContext {
  /** The batch's transaction: write through it and your rows commit or roll back with the batch. */
  trx: Knex.Transaction
  /** The flag store's view of the same transaction. */
  writer: FlagWriter
}

/** What the receiver knows about the operation being applied besides its data. */
export interface OperationMeta {
  /** Its index in the batch's `operations`. */
  index: number
  /**
   * The revision of the record the sender based it on. Undefined when the
   * operation has none, or when the receiver runs with `conflicts: 'last-writer-wins'`.
   * Throw `OperationConflict` to refuse the operation as a conflict (409).
   */
  baseRevision?: number
}

/**
 * Applies one collection's operations inside the batch transaction. Throw
 * `OperationRejected` for an invalid operation: the whole batch rolls back and
 * the sender gets a 422 naming the operation.
 */
export interface Collection {
  /**
   * Optional: under the lock a batch's `writer.statesAt` walks at most `MAX_STEPS_UNDER_LOCK`
   * change-log rows per record. When a record changed more often since its base, the batch
   * rolls back, this is called outside the lock with each `[recordId, baseRevision]` of this
   * collection's operations, and the batch is applied again with what it returns. Read them with
   * `store.readStatesAt` (your scope): a state at an issued revision never changes, so under the
   * lock only what was committed since is read.
   */
  prefetch?(
    store: FlagStore,
    bases: ReadonlyArray<readonly [recordId: string, baseRevision: number]>,
  ): Promise<BaseStates | undefined>
  /**
   * Optional: called once per batch with the ids its updates and deletes (and
   * inserts with a base revision) touch, and each `[recordId, baseRevision]`
   * the batch carries, to prefetch in one query.
   */
  prepare?(
    ctx: CollectionContext,
    recordIds: string[],
    bases: ReadonlyArray<readonly [recordId: string, baseRevision: number]>,
  ): Promise<void>
  insert(ctx: CollectionContext, recordId: string, record: Record<string, unknown>, meta: OperationMeta): Promise<void>
  update(ctx: CollectionContext, recordId: string, changes: Record<string, unknown>, meta: OperationMeta): Promise<void>
  /** Deleting a record that is already gone is not an error. */
  delete(ctx: CollectionContext, recordId: string, meta: OperationMeta): Promise<void>
}
