import type { Operation } from '@flagsync/protocol'

/**
 * Compacts the operations of one record, in queue order, into at most one.
 * Returns null when they cancel out (insert … delete). `existsRemotely`: the
 * record may exist at the receiver even though the run starts with an insert
 * (e.g. an earlier batch created it), so a final delete must be sent.
 *
 * The rules, per next operation: an insert replaces whatever came before; a
 * delete replaces it too, except that it cancels an insert when the record
 * cannot exist at the receiver before this run (the run starts with an insert
 * and `existsRemotely` is false: after an absorbed update or delete the record
 * may exist, so the delete has to be sent); an update merges into an insert or
 * an update, and after a delete changes nothing (the client refuses to queue
 * it; there is no record to update). So the result is the last insert or
 * delete (or the first update after nothing), with the updates after it
 * merged in once, at the end.
 */
export function compactRecord(ops: readonly Operation[], existsRemotely = false): Operation | null {
  const first = ops[0]
  if (first === undefined) return null
  const mayExist = existsRemotely || first.action !== 'insert'
  let current = null as Operation | null
  /** Queue index of the first update to merge into `current`: every operation from there on is an update. */
  let from = 0
  let base: number | undefined
  for (let i = 0; i < ops.length; i++) {
    const op = ops[i] as Operation
    base ??= op.baseRevision
    if (op.action === 'update' && current !== null) continue
    current = op.action === 'delete' && current?.action === 'insert' && !mayExist ? null : op
    from = i + 1
  }
  if (current !== null && current.action !== 'delete' && from < ops.length) {
    const field = current.action === 'insert' ? 'record' : 'changes'
    let merged = { ...(current as unknown as Record<typeof field, Record<string, unknown>>)[field] }
    for (let i = from; i < ops.length; i++) {
      merged = assignChanges(merged, (ops[i] as Extract<Operation, { action: 'update' }>).changes)
    }
    // A copy of the last insert or update with the merged fields; its baseRevision is set to the run's earliest below.
    current = { ...current, [field]: merged } as Operation
  }
  return withBase(current, base)
}

/**
 * `changes` merged into `merged` (a fresh copy the caller owns), later fields winning. Object.assign is the fast path,
 * but it assigns `__proto__` (setting the prototype) where spread defines a field: changes with an own `__proto__` are
 * spread.
 */
function assignChanges(merged: Record<string, unknown>, changes: Record<string, unknown>): Record<string, unknown> {
  return Object.hasOwn(changes, '__proto__') ? { ...merged, ...changes } : Object.assign(merged, changes)
}

/**
 * `op` with `base` as its `baseRevision` (none when undefined); `op` itself when it has that base already. A
 * compacted operation carries the EARLIEST base of its run: the receiver checks the whole run's fields against what
 * the editor saw before the first of them, so a change someone else made in between is still caught.
 */
export function withBase<T extends Operation | null>(op: T, base: number | undefined): T {
  if (op === null || op.baseRevision === base) return op
  const { baseRevision: _replaced, ...rest } = op as Operation
  return (base === undefined ? rest : { ...rest, baseRevision: base }) as T
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

// What a record's slot holds; `kind` mirrors `base.action` so the scan never reads the earlier operation back.
const NONE = 0
const INSERT = 1
const UPDATE = 2
const DELETE = 3
/** Flag in a slot's KIND: the record may already exist at the receiver (see `compactRecord`'s `mayExist`). */
const MAY_EXIST = 4
// A slot's state, side by side: the last insert or delete, or the first update after it (queue index + 1; 0 when
// cancelled out); its kind and MAY_EXIST; the last update to merge into it; the first operation of the record that
// carries a `baseRevision` (see `withBase`).
const BASE = 0
const KIND = 1
const LAST = 2
const FIRST_BASE = 3
const STRIDE = 4

/** Where the merge walks its chain: reused, so a record's merge allocates nothing but its result. */
let chain = /* @__PURE__ */ new Int32Array(64)

/** Own enumerable fields of `first`, then the changes of the updates chained back from queue index `last`, in order. */
function mergeFields(first: Record<string, unknown>, ops: readonly Operation[], last: number, prev: Int32Array) {
  let count = 0
  for (let i = last; i >= 0; i = (prev[i] as number) - 1) {
    if (count === chain.length) {
      const grown = new Int32Array(count * 2)
      grown.set(chain)
      chain = grown
    }
    chain[count++] = i
  }
  let merged: Record<string, unknown> = { ...first }
  while (count > 0) {
    const changes = (ops[chain[--count] as number] as Extract<Operation, { action: 'update' }>).changes
    // Inlined `assignChanges`: this loop is compact()'s hottest (bench compaction.ratio).
    if (Object.hasOwn(changes, '__proto__')) merged = { ...merged, ...changes }
    else Object.assign(merged, changes)
  }
  return merged
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
 *
 * The same rules as `compactRecord`, laid out for speed over many records: a
 * record is a slot number (its rank of first appearance) into one typed array
 * holding its state side by side, so the scan allocates nothing per operation
 * and an operation costs one cache line of state besides its Map entry.
 * Updates that land on an insert or an update are only chained (each to the
 * one before it, written at its own queue index, so in queue order) and merged
 * once at the end: merging each into a fresh copy costs a copy of every field
 * so far per update. An operation that comes out unchanged is not read again.
 * Indexes are stored plus one, so the arrays' zero means none.
 */
export function compact(ops: readonly Operation[], options: CompactOptions = {}): Operation[] {
  const { existsRemotely } = options
  const n = ops.length
  /** The record slots of each collection by record id; the first few collections also in `names` and `maps`. */
  const byCollection = new Map<string, Map<string, number>>()
  const names: string[] = []
  const maps: Map<string, number>[] = []
  /** Slot s's state at STRIDE * s: see BASE, KIND, LAST and FIRST_BASE. */
  const state = new Int32Array(n * STRIDE)
  /** Per queue index of an update chained for merging: the one chained before it, queue index + 1 (0: the first). */
  const prev = new Int32Array(n)
  let slots = 0
  let lastCollection: string | undefined
  let records: Map<string, number> | undefined
  for (let i = 0; i < n; i++) {
    const op = ops[i] as Operation
    const collection = op.collection
    if (collection !== lastCollection || records === undefined) {
      // Inline, not a per-call closure: a new closure each call is a new call target, which deoptimizes the loop.
      let k = 0
      while (k < names.length && names[k] !== collection) k++
      records = k < maps.length ? (maps[k] as Map<string, number>) : recordsOf(byCollection, collection, names, maps)
      lastCollection = collection
    }
    const s = records.get(op.recordId)
    if (s === undefined) {
      records.set(op.recordId, slots)
      openSlot(state, slots++ * STRIDE, i, op, existsRemotely)
    } else fold(state, prev, s * STRIDE, i, op)
  }
  const out: Operation[] = []
  for (let s = 0; s < slots; s++) {
    const result = slotResult(ops, state, prev, s * STRIDE)
    if (result !== null) out.push(result)
  }
  return out
}

/**
 * The record slots of a collection not among `names`: the first collections seen are searched in that short array
 * before the Map of all of them, since a queue holds few and consecutive operations often change collection.
 */
function recordsOf(
  byCollection: Map<string, Map<string, number>>,
  collection: string,
  names: string[],
  maps: Map<string, number>[],
): Map<string, number> {
  let records = byCollection.get(collection)
  if (records === undefined) {
    records = new Map()
    byCollection.set(collection, records)
  }
  if (names.length < 4) {
    names.push(collection)
    maps.push(records)
  }
  return records
}

/** The first operation `op` (queue index `i`) of a record opens its slot at `o`. */
function openSlot(
  state: Int32Array,
  o: number,
  i: number,
  op: Operation,
  existsRemotely: CompactOptions['existsRemotely'],
): void {
  state[o + BASE] = i + 1
  if (op.action === 'insert') {
    state[o + KIND] = existsRemotely?.(op.collection, op.recordId) ? INSERT | MAY_EXIST : INSERT
  } else state[o + KIND] = (op.action === 'update' ? UPDATE : DELETE) | MAY_EXIST
  if (op.baseRevision !== undefined) state[o + FIRST_BASE] = i + 1
}

/** A later operation `op` (queue index `i`) of the record in the slot at `o`, by `compactRecord`'s rules. */
function fold(state: Int32Array, prev: Int32Array, o: number, i: number, op: Operation): void {
  const action = op.action
  if (op.baseRevision !== undefined && state[o + FIRST_BASE] === 0) state[o + FIRST_BASE] = i + 1
  const flags = state[o + KIND] as number
  const kind = flags & 3
  if (action === 'update') {
    if (kind === NONE) {
      state[o + BASE] = i + 1
      state[o + KIND] = UPDATE | (flags & MAY_EXIST)
    } else if (kind !== DELETE) {
      prev[i] = state[o + LAST] as number
      state[o + LAST] = i + 1
    }
    // Update after delete changes nothing (see compactRecord).
    return
  }
  const mayExist = flags & MAY_EXIST
  if (action === 'delete' && kind === INSERT && mayExist === 0) {
    state[o + BASE] = 0
    state[o + KIND] = NONE
  } else {
    state[o + BASE] = i + 1
    state[o + KIND] = (action === 'delete' ? DELETE : INSERT) | mayExist
  }
  state[o + LAST] = 0
}

/** What the slot at `o` compacts to (null: it cancelled out), its chained updates merged once. */
function slotResult(ops: readonly Operation[], state: Int32Array, prev: Int32Array, o: number): Operation | null {
  const b = state[o + BASE] as number
  if (b === 0) return null
  const base = ops[b - 1] as Operation
  const first = state[o + FIRST_BASE] as number
  const last = (state[o + LAST] as number) - 1
  const unmerged = last < 0 || ((state[o + KIND] as number) & 3) === DELETE
  // No base revision anywhere in the run: the operation as queued, without reading it again.
  if (unmerged && first === 0) return base
  const baseRevision = first === 0 ? undefined : (ops[first - 1] as Operation).baseRevision
  if (unmerged) return withBase(base, baseRevision)
  const { collection, recordId } = base
  const merged: Operation =
    base.action === 'insert'
      ? { action: 'insert', collection, recordId, record: mergeFields(base.record, ops, last, prev) }
      : {
          action: 'update',
          collection,
          recordId,
          changes: mergeFields((base as Extract<Operation, { action: 'update' }>).changes, ops, last, prev),
        }
  if (baseRevision !== undefined) merged.baseRevision = baseRevision
  return merged
}
