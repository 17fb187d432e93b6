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
  let base: number | undefined
  for (let i = 0; i < ops.length; i++) {
    const op = ops[i] as Operation
    base ??= op.baseRevision
    if (i > 0) current = fold(current, op, mayExist)
  }
  return withBase(current, base)
}

/**
 * The compacted operation carries the EARLIEST base of its run: the receiver
 * checks the whole run's fields against what the editor saw before the first
 * of them, so a change someone else made in between is still caught.
 */
function withBase(op: Operation | null, base: number | undefined): Operation | null {
  if (op === null || op.baseRevision === base) return op
  const { baseRevision: _later, ...rest } = op
  return base === undefined ? rest : { ...rest, baseRevision: base }
}

/** Options of `compact`. */
export interface CompactOptions {
  /**
   * Asked once per record whose run starts with an insert: may the record
   * already exist at the receiver? Default: no, the insert creates it, so
   * insert … delete cancels out. Say yes for records an earlier batch sent.
   */
  existsRemotely?: (collection: string, recordId: string) => boolean
}

const NONE = 0
const INSERT = 1
const UPDATE = 2
const DELETE = 3
type Kind = typeof NONE | typeof INSERT | typeof UPDATE | typeof DELETE

/**
 * The compacted state of one record while the queue is scanned. Updates that
 * land on an insert or an update are only linked here and merged once at the
 * end: merging each into a fresh copy costs a copy of every field so far per
 * update, and even collecting them in per-record arrays costs more than the
 * Map lookup. So the links live in one typed array indexed by queue position
 * (written in order, no allocation), and `kind` mirrors `base.action` so the
 * scan never touches the earlier operation's memory.
 */
interface Slot {
  /** The last insert or delete, or the first update after it; null when cancelled out. */
  base: Operation | null
  kind: Kind
  /** Queue index of the newest update to merge into `base`, -1 for none; earlier ones via `previous`. */
  tail: number
  mayExist: boolean
  /** The first `baseRevision` of the record's run (see `withBase`). */
  baseRevision: number | undefined
}

function kindOf(op: Operation): Kind {
  return op.action === 'insert' ? INSERT : op.action === 'update' ? UPDATE : DELETE
}

/** Own enumerable fields of `sources` in order, later ones winning; `__proto__` stays a plain field as with spread. */
function mergeFields(
  first: Record<string, unknown>,
  sources: readonly Record<string, unknown>[],
): Record<string, unknown> {
  const merged: Record<string, unknown> = { ...first }
  for (const source of sources) {
    // Object.assign is the fast path, but it assigns `__proto__` (setting the prototype) where spread defines a field.
    if (!Object.hasOwn(source, '__proto__')) {
      Object.assign(merged, source)
      continue
    }
    for (const key of Object.keys(source)) {
      if (key === '__proto__') {
        Object.defineProperty(merged, key, { value: source[key], enumerable: true, writable: true, configurable: true })
      } else merged[key] = source[key]
    }
  }
  return merged
}

function materialize(slot: Slot, ops: readonly Operation[], previous: Int32Array): Operation | null {
  const { base } = slot
  if (base === null || slot.tail < 0) return withBase(base, slot.baseRevision)
  const changes: Record<string, unknown>[] = []
  for (let i = slot.tail; i >= 0; i = previous[i] as number) {
    changes.push((ops[i] as Extract<Operation, { action: 'update' }>).changes)
  }
  changes.reverse()
  const { collection, recordId } = base
  const baseRevision = slot.baseRevision === undefined ? {} : { baseRevision: slot.baseRevision }
  if (base.action === 'insert')
    return { action: 'insert', collection, recordId, record: mergeFields(base.record, changes), ...baseRevision }
  if (base.action === 'update')
    return { action: 'update', collection, recordId, changes: mergeFields(base.changes, changes), ...baseRevision }
  return withBase(base, slot.baseRevision)
}

/** Folds queue entry `i` into its record's slot (the same rules as `fold`). */
function absorb(slot: Slot, op: Operation, i: number, previous: Int32Array): void {
  slot.baseRevision ??= op.baseRevision
  const action = op.action
  if (action === 'update') {
    if (slot.kind === NONE) {
      slot.base = op
      slot.kind = UPDATE
    } else if (slot.kind !== DELETE) {
      previous[i] = slot.tail
      slot.tail = i
    }
    // Update after delete changes nothing (see fold).
    return
  }
  if (action === 'delete' && slot.kind === INSERT && !slot.mayExist) {
    slot.base = null
    slot.kind = NONE
  } else {
    slot.base = op
    slot.kind = action === 'delete' ? DELETE : INSERT
  }
  slot.tail = -1
}

/**
 * Merges redundant queued operations: per record, insert+update → insert with
 * the merged record, update+update → update with merged changes, update+delete
 * → delete, delete+insert → insert, insert+delete → nothing (when the insert
 * starts the record's run and the record does not exist remotely, see
 * `options.existsRemotely`). Records keep the order of their first appearance.
 *
 * Pure and O(n): one Map lookup per operation, each record's merged fields
 * built once; the inputs are never mutated. Only pass operations that have
 * not been sent yet: compacting into an operation the receiver may already
 * have applied is wrong.
 */
export function compact(ops: readonly Operation[], options: CompactOptions = {}): Operation[] {
  const { existsRemotely } = options
  const byCollection = new Map<string, Map<string, Slot>>()
  const order: Slot[] = []
  const previous = new Int32Array(ops.length)
  let lastCollection: string | undefined
  let records: Map<string, Slot> | undefined
  for (let i = 0; i < ops.length; i++) {
    const op = ops[i] as Operation
    // Queues are mostly one collection: skip the outer lookup while it repeats.
    if (op.collection !== lastCollection || records === undefined) {
      lastCollection = op.collection
      records = byCollection.get(op.collection)
      if (records === undefined) {
        records = new Map()
        byCollection.set(op.collection, records)
      }
    }
    const slot = records.get(op.recordId)
    if (slot === undefined) {
      const kind = kindOf(op)
      const mayExist = kind !== INSERT || (existsRemotely?.(op.collection, op.recordId) ?? false)
      const created: Slot = { base: op, kind, tail: -1, mayExist, baseRevision: op.baseRevision }
      records.set(op.recordId, created)
      order.push(created)
    } else {
      absorb(slot, op, i, previous)
    }
  }
  const out: Operation[] = []
  for (const slot of order) {
    const op = materialize(slot, ops, previous)
    if (op !== null) out.push(op)
  }
  return out
}
