import type { Operation } from '@flagsync/protocol'
import { HttpError } from '@flagsync/server-kit'
import { type FlagWriter, TABLES } from '@flagsync/store'
import type { Collection, CollectionContext } from './collection.js'
import { OperationRejected } from './operation-rejected.js'

export interface BatchOutcome {
  applied: number
  duplicate: boolean
}

/**
 * Applies a validated batch inside the store's write transaction, recording
 * its id in the same transaction: a replay after a lost response (or a
 * restart) finds the id and changes nothing.
 */
export async function applyBatch(
  writer: FlagWriter,
  batchId: string,
  operations: Operation[],
  collections: ReadonlyMap<string, Collection>,
  now: number,
): Promise<BatchOutcome> {
  const { trx } = writer
  const seen = await trx(TABLES.batches).where('batch_id', batchId).first('batch_id')
  if (seen) return { applied: 0, duplicate: true }

  const ctx: CollectionContext = { trx, writer }
  for (const [name, ids] of recordIdsByCollection(operations)) {
    await collections.get(name)?.prepare?.(ctx, ids)
  }
  for (const [index, op] of operations.entries()) {
    const collection = collections.get(op.collection) as Collection
    try {
      if (op.action === 'insert') await collection.insert(ctx, op.recordId, op.record)
      else if (op.action === 'update') await collection.update(ctx, op.recordId, op.changes)
      else await collection.delete(ctx, op.recordId)
    } catch (error) {
      if (error instanceof OperationRejected) {
        throw new HttpError(
          'validation_failed',
          `operation ${index} (${op.action} ${op.collection}/${op.recordId}): ${error.message}`,
          {
            operationIndex: index,
            issues: error.issues,
          },
        )
      }
      throw error
    }
  }
  await trx(TABLES.batches).insert({ batch_id: batchId, applied: operations.length, applied_at: now })
  return { applied: operations.length, duplicate: false }
}

function recordIdsByCollection(operations: Operation[]): Map<string, string[]> {
  const out = new Map<string, string[]>()
  for (const op of operations) {
    const ids = out.get(op.collection) ?? []
    ids.push(op.recordId)
    out.set(op.collection, ids)
  }
  return out
}
