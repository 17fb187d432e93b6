import type { Issue, Operation } from '@flagsync/protocol'
import { HttpError } from '@flagsync/server-kit'
import {
  type BaseStates,
  BaseStatesNeeded,
  type FlagStore,
  type FlagWriter,
  TABLES,
  toStoreError,
} from '@flagsync/store'
import type { Collection, CollectionContext } from './collection.js'
import { OperationConflict } from './operation-conflict.js'
import { OperationRejected } from './operation-rejected.js'

/** How operations with a `baseRevision` are treated: checked three-way (default), or as if they had none. */
export type ConflictMode = 'merge' | 'last-writer-wins'

/** One entry of a 409 body's `conflicts`. */
export interface BatchConflict {
  operationIndex: number
  collection: string
  recordId: string
  kind: 'field' | 'deleted' | 'exists'
  fields: string[]
  base: Record<string, unknown> | null
  current: Record<string, unknown> | null
  currentRevision: number | null
  reason: string
}

/** The base revision an operation carries, as the receiver's conflict mode lets collections see it. */
function baseRevisionOf(op: Operation, mode: ConflictMode): number | undefined {
  return mode === 'merge' ? op.baseRevision : undefined
}

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
  mode: ConflictMode = 'merge',
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
  for (const [name, { ids, bases }] of readsByCollection(operations, mode)) {
    await collections.get(name)?.prepare?.(ctx, ids, bases)
  }
  // Every conflict of the batch is reported at once; any one of them rolls the batch back.
  const conflicts: BatchConflict[] = []
  for (const [index, op] of operations.entries()) {
    const collection = collections.get(op.collection)
    if (!collection)
      throw rejected(index, op, new OperationRejected(`unknown collection ${JSON.stringify(op.collection)}`))
    const meta = { index, baseRevision: baseRevisionOf(op, mode) }
    writer.opIndex = index
    try {
      if (op.action === 'insert') await collection.insert(ctx, op.recordId, op.record, meta)
      else if (op.action === 'update') await collection.update(ctx, op.recordId, op.changes, meta)
      else await collection.delete(ctx, op.recordId, meta)
    } catch (error) {
      if (!(error instanceof OperationConflict)) throw operationFailure(index, op, error)
      conflicts.push({ operationIndex: index, collection: op.collection, recordId: op.recordId, ...error.report })
    }
  }
  writer.opIndex = null
  if (conflicts.length > 0) throw conflictError(conflicts)
  return { applied: operations.length, duplicate: false }
}

/** The 409: nothing of the batch is applied (the caller's transaction rolls back). */
function conflictError(conflicts: BatchConflict[]): HttpError {
  const first = conflicts[0] as BatchConflict
  const more = conflicts.length > 1 ? ` (and ${conflicts.length - 1} more)` : ''
  return new HttpError(
    'conflict',
    `operation ${first.operationIndex} (${first.collection}/${first.recordId}) conflicts: ${first.reason}${more}; nothing of the batch was applied`,
    { conflicts },
  )
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
  // Not a failure: the receiver reads those states outside the lock and applies the batch again.
  if (error instanceof HttpError || error instanceof BaseStatesNeeded) return error
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

/**
 * The base states of the batch's operations, read by each collection's `prefetch` outside the
 * write lock for the batch's second pass (the store's `baseStates`); none without base revisions.
 */
export async function prefetchBases(
  store: FlagStore,
  operations: Operation[],
  collections: ReadonlyMap<string, Collection>,
  mode: ConflictMode,
): Promise<BaseStates[]> {
  const out: BaseStates[] = []
  for (const [name, { bases }] of readsByCollection(operations, mode)) {
    const prefetch = collections.get(name)?.prefetch
    if (bases.length === 0 || !prefetch) continue
    const states = await prefetch(store, bases)
    if (states) out.push(states)
  }
  return out
}

interface Reads {
  ids: string[]
  bases: Array<readonly [string, number]>
}

/**
 * Ids whose current state the batch reads (updates, deletes, and inserts
 * with a base revision: a plain insert replaces without reading) and the
 * base revisions it checks against.
 */
function readsByCollection(operations: Operation[], mode: ConflictMode): Map<string, Reads> {
  const out = new Map<string, Reads>()
  for (const op of operations) {
    const base = baseRevisionOf(op, mode)
    if (op.action === 'insert' && base === undefined) continue
    let reads = out.get(op.collection)
    if (!reads) {
      reads = { ids: [], bases: [] }
      out.set(op.collection, reads)
    }
    reads.ids.push(op.recordId)
    if (base !== undefined) reads.bases.push([op.recordId, base])
  }
  return out
}
