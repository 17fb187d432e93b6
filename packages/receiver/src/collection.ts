import type { FlagWriter } from '@flagsync/store'
import type { Knex } from 'knex'

export interface CollectionContext {
  /** The batch's transaction: write through it and your rows commit or roll back with the batch. */
  trx: Knex.Transaction
  /** The flag store's view of the same transaction. */
  writer: FlagWriter
}

/**
 * Applies one collection's operations inside the batch transaction. Throw
 * `OperationRejected` for an invalid operation: the whole batch rolls back and
 * the sender gets a 422 naming the operation.
 */
export interface Collection {
  /** Optional: called once per batch with the ids its updates and deletes touch, to prefetch in one query. */
  prepare?(ctx: CollectionContext, recordIds: string[]): Promise<void>
  insert(ctx: CollectionContext, recordId: string, record: Record<string, unknown>): Promise<void>
  update(ctx: CollectionContext, recordId: string, changes: Record<string, unknown>): Promise<void>
  /** Deleting a record that is already gone is not an error. */
  delete(ctx: CollectionContext, recordId: string): Promise<void>
}
