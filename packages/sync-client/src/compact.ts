import type { Operation } from '@flagsync/protocol'

/**
 * Folds the next queued operation of one record into the compacted one.
 *
 * `mayExist` says whether the record may already exist at the receiver before
 * this run of operations: true when the run starts with an update or a delete.
 * An insert that starts the run is taken to create the record, so insert then
 * delete cancels out; after an absorbed update or delete the record may exist,
 * so the delete has to be sent.
 */
function fold(current: Operation | null, next: Operation, mayExist: boolean): Operation | null {
  if (current === null) return next
  switch (next.action) {
    case 'insert':
      // An insert replaces the record whatever came before.
      return next
    case 'delete':
      return current.action === 'insert' && !mayExist ? null : next
    case 'update':
      if (current.action === 'insert') {
        return {
          action: 'insert',
          collection: current.collection,
          recordId: current.recordId,
          record: { ...current.record, ...next.changes },
        }
      }
      if (current.action === 'update') {
        return {
          action: 'update',
          collection: current.collection,
          recordId: current.recordId,
          changes: { ...current.changes, ...next.changes },
        }
      }
      // Update after delete: the client refuses to queue it; if it gets here
      // anyway it changes nothing (there is no record to update).
      return current
  }
}

/**
 * Compacts the operations of one record, in queue order, into at most one.
 * Returns null when they cancel out (insert … delete). `existsRemotely`: the
 * record may exist at the receiver even though the run starts with an insert
 * (e.g. an earlier batch created it), so a final delete must be sent.
 */
export function compactRecord(ops: readonly Operation[], existsRemotely = false): Operation | null {
  const first = ops[0]
  if (first === undefined) return null
  const mayExist = existsRemotely || first.action !== 'insert'
  let current: Operation | null = first
  for (let i = 1; i < ops.length; i++) current = fold(current, ops[i] as Operation, mayExist)
  return current
}

export interface CompactOptions {
  /**
   * Asked once per record whose run starts with an insert: may the record
   * already exist at the receiver? Default: no, the insert creates it, so
   * insert … delete cancels out. Say yes for records an earlier batch sent.
   */
  existsRemotely?: (collection: string, recordId: string) => boolean
}

interface Slot {
  op: Operation | null
  mayExist: boolean
}

/**
 * Merges redundant queued operations: per record, insert+update → insert with
 * the merged record, update+update → update with merged changes, update+delete
 * → delete, delete+insert → insert, insert+delete → nothing (when the insert
 * starts the record's run and the record does not exist remotely, see
 * `options.existsRemotely`). Records keep the order of their first appearance.
 *
 * Pure and O(n): one Map lookup per operation; the inputs are never mutated.
 * Only pass operations that have not been sent yet: compacting into an
 * operation the receiver may already have applied is wrong.
 */
export function compact(ops: readonly Operation[], options: CompactOptions = {}): Operation[] {
  const { existsRemotely } = options
  const byCollection = new Map<string, Map<string, Slot>>()
  const order: Slot[] = []
  for (const op of ops) {
    let records = byCollection.get(op.collection)
    if (records === undefined) {
      records = new Map()
      byCollection.set(op.collection, records)
    }
    const slot = records.get(op.recordId)
    if (slot === undefined) {
      const mayExist = op.action !== 'insert' || (existsRemotely?.(op.collection, op.recordId) ?? false)
      const created: Slot = { op, mayExist }
      records.set(op.recordId, created)
      order.push(created)
    } else {
      slot.op = fold(slot.op, op, slot.mayExist)
    }
  }
  const out: Operation[] = []
  for (const slot of order) if (slot.op !== null) out.push(slot.op)
  return out
}
