import type { Issue, Operation } from '@flagsync/protocol'
import { HttpError } from '@flagsync/server-kit'
import { type FlagWriter, TABLES, toStoreError } from '@flagsync/store'
import type { Collection, CollectionContext } from './collection.js'
import { OperationRejected } from './operation-rejected.js'

export interface BatchOutcome {
  applied: number
  duplicate: boolean
}

/**
 * Applies a validated batch inside the store's write transaction, recording
 * its id in the same transaction: a replay after a lost response (or a
 * restart) finds the id and changes nothing. Any failing operation throws, so
 * the caller's transaction rolls back as a whole.
 */
export async function applyBatch(
  writer: FlagWriter,
  batchId: string,
  operations: Operation[],
  collections: ReadonlyMap<string, Collection>,
  now: number,
): Promise<BatchOutcome> {
  const { trx } = writer
  // Records the id and checks it in one statement: no row inserted means a
  // replay. The store took the revision lock before calling us, so two
  // requests with the same batchId cannot both insert it, and a batch that
  // fails rolls the row back with everything else.
  const recorded = await trx(TABLES.batches)
    .insert({ batch_id: batchId, applied: operations.length, applied_at: now })
    .onConflict('batch_id')
    .ignore()
    .returning('batch_id')
  if (recorded.length === 0) return { applied: 0, duplicate: true }

  const ctx: CollectionContext = { trx, writer }
  for (const [name, ids] of recordIdsByCollection(operations)) {
    await collections.get(name)?.prepare?.(ctx, ids)
  }
  for (const [index, op] of operations.entries()) {
    const collection = collections.get(op.collection)
    if (!collection)
      throw rejected(index, op, new OperationRejected(`unknown collection ${JSON.stringify(op.collection)}`))
    try {
      if (op.action === 'insert') await collection.insert(ctx, op.recordId, op.record)
      else if (op.action === 'update') await collection.update(ctx, op.recordId, op.changes)
      else await collection.delete(ctx, op.recordId)
    } catch (error) {
      throw operationFailure(index, op, error)
    }
  }
  return { applied: operations.length, duplicate: false }
}

/** Issue paths relative to the request body, e.g. `operations[2].record.is_enabled`. */
export function operationIssuePath(index: number, path: string): string {
  const base = `operations[${index}]`
  if (path === '' || path === '(root)') return base
  return path.startsWith('[') ? `${base}${path}` : `${base}.${path}`
}

function rejected(index: number, op: Operation, error: OperationRejected): HttpError {
  const issues: Issue[] = error.issues.map((i) => ({ ...i, path: operationIssuePath(index, i.path) }))
  const first = issues[0]
  const detail = first && first.message !== error.message ? `: ${first.path}: ${first.message}` : ''
  return new HttpError(
    'validation_failed',
    `operation ${index} (${op.action} ${op.collection}/${op.recordId}): ${error.message}${detail}`,
    { operationIndex: index, issues },
  )
}

/**
 * What a failing operation becomes: a rejection names the operation (422); a
 * constraint violation or a value the database cannot store (PostgreSQL data
 * exception) is the data's fault too, so it is a 422 as well (a retry would
 * fail the same way); a busy or unreachable database stays retryable (503);
 * anything else is a 500.
 */
function operationFailure(index: number, op: Operation, error: unknown): Error {
  if (error instanceof OperationRejected) return rejected(index, op, error)
  if (error instanceof HttpError) return error
  const storeError = toStoreError(error)
  if (storeError.code === 'conflict') {
    return rejected(
      index,
      op,
      new OperationRejected('violates a database constraint', [
        { path: '(root)', message: 'the database refused the write (unique, not-null or foreign-key constraint)' },
      ]),
    )
  }
  if (storeError.code === 'validation_failed') {
    return rejected(
      index,
      op,
      new OperationRejected('the database cannot store a value of this operation', [
        { path: '(root)', message: storeError.message },
      ]),
    )
  }
  return storeError
}

/** Ids whose current state the batch reads: updates and deletes (an insert replaces without reading). */
function recordIdsByCollection(operations: Operation[]): Map<string, string[]> {
  const out = new Map<string, string[]>()
  for (const op of operations) {
    if (op.action === 'insert') continue
    const ids = out.get(op.collection) ?? []
    ids.push(op.recordId)
    out.set(op.collection, ids)
  }
  return out
}
