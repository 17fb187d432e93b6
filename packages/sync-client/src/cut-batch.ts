import type { Operation } from '@flagsync/protocol'
import { compactRecord, withBase } from './compact.js'
import { heldKeys } from './conflict-store.js'
import { lazyNow } from './lazy.js'
import { type BatchRow, clearTombstonesOf, type OutboxDexie, recordKey, type StoredOp } from './outbox-schema.js'

/** How many queued operations one cut may look at, at least. */
const MIN_WINDOW = 200

export interface CutOptions {
  batchSize: number
  newBatchId: () => string
  now: number
  /**
   * Non-zero: the batch goes out right after the cut, so it is persisted
   * already marked as on the wire until then (and as possibly sent); this
   * saves rewriting the whole row just before the request.
   */
  sendingUntil: number
  /** What the previous cut of this drain left of its window (see `QueueView`); `EMPTY_VIEW` when unknown. */
  view: QueueView
  /**
   * Batches delivered or on the wire whose acknowledgement is not recorded
   * in IndexedDB yet, in order: the records they touch exist or not as these
   * batches leave them, whatever `remoteKeys` still says.
   */
  unrecorded?: readonly BatchRow[]
  /**
   * The base a compacted operation goes out with. One that predates an edit
   * of the record this client delivered since would make the receiver take
   * that edit for someone else's: it moves to the revision the receiver
   * acknowledged that delivery with, or is dropped when that is unknown (a
   * replay's answer, or the edit still on the wire, see `unrecorded`).
   */
  rebase?: (key: string, baseRevision: number) => number | undefined
}

/**
 * What a drain knows about the front of the queue: no queued operation has
 * an id below `from`, and those from `from` to `last` are `rows` (read by an
 * earlier cut of this drain and not taken). Reading from `from` skips the
 * deleted keys in front of the queue, which IndexedDB implementations walk
 * over; keeping `rows` means each queued operation is read once per drain
 * instead of once per cut its window overlaps.
 *
 * Valid while nothing is put back into the queue under an old id, which only
 * happens when a batch is dropped (discard, dead letter): every batch this
 * drain cuts is marked as sending until it is acknowledged, so no other tab
 * can drop it, and the drain starts from `EMPTY_VIEW` after dropping one.
 * Operations may still be discarded from the queue meanwhile: a cut checks
 * that the rows it takes from `rows` are all still there.
 */
export interface QueueView {
  readonly from: number
  readonly last: number
  readonly rows: readonly StoredOp[]
}

/** Shared by every drain: read-only by its type (a cut makes a new view, see `viewAfter`). */
export const EMPTY_VIEW: QueueView = { from: 0, last: -1, rows: [] }

export interface Cut {
  batch: BatchRow | undefined
  /** The view for the next cut of this drain. */
  view: QueueView
}

/** A record's queued operations in the window, in queue order. */
type Runs = Map<string, StoredOp[]>

interface Selection {
  operations: Operation[]
  sourceIds: number[][]
  /** Every queued operation taken, including pairs that cancelled out. */
  sources: StoredOp[]
}

/**
 * Cuts the next batch; call inside a rw transaction over ops, batches,
 * tombstones and remoteKeys, when no persisted batch is to be sent first.
 *
 * Reads the oldest queued operations (a window of max(200, 4 × batchSize);
 * see `QueueView` for what a drain keeps between cuts), groups them by record
 * in order of first appearance, compacts each record's run, and takes
 * records until `batchSize` operations are selected: a compacted operation
 * takes all its source operations with it. Records that
 * cancel out are consumed without being sent. Operations beyond the window
 * are later (higher ids) than every operation in it, so a record split by the
 * window edge keeps its order and is merely compacted in two parts.
 */
export async function cutBatch(db: OutboxDexie, options: CutOptions): Promise<Cut> {
  const window = Math.max(MIN_WINDOW, options.batchSize * 4)
  let view = options.view
  // Records with a conflict: their queued operations wait for its resolution (not read, not taken).
  const held = await heldKeys(db)
  for (;;) {
    const { rows, cached, exhausted } = await readWindow(db, view, window, held)
    if (rows.length === 0) return { batch: undefined, view }
    const selection = select(await compactQueued(db, rows, options.unrecorded), options.batchSize, options.rebase)
    if (held.size > 0) {
      // Records are held only after a conflict: that delete is in the lazy chunk (held-cut.ts).
      if (await lazyNow().deleteTakenAmongHeld(db, cached, selection.sources)) throw STALE_VIEW
    } else await deleteTaken(db, rows, cached, selection.sources)
    view = viewAfter(rows, selection.sources)
    if (selection.operations.length === 0) {
      // Everything in the window cancelled out: nothing is queued for those records any more.
      await clearTombstonesOf(db, selection.sources)
      if (exhausted) return { batch: undefined, view }
      continue
    }
    // Stored as a `StoredBatchRow`: the operations and their sources as JSON text.
    const { operations, sourceIds, sources } = selection
    const stored = {
      batchId: options.newBatchId(),
      attempts: 0,
      nextAttemptAt: 0,
      lastError: null,
      sendingUntil: options.sendingUntil,
      sent: options.sendingUntil > 0,
      createdAt: options.now,
      operationsJson: JSON.stringify(operations),
      sourcesJson: JSON.stringify({ sourceIds, sources }),
    }
    const seq = await db.batches.add(stored)
    const { sourcesJson: _sources, ...bookkeeping } = stored
    return { batch: { ...bookkeeping, seq, operations, sourceIds, sources }, view }
  }
}

/**
 * The oldest `window` queued operations: the rows the view holds (`cached`
 * of them, checked when taken), then what follows them. `exhausted`: the
 * queue has nothing beyond the rows returned.
 */
async function readWindow(
  db: OutboxDexie,
  view: QueueView,
  window: number,
  held: ReadonlySet<string>,
): Promise<{ rows: StoredOp[]; cached: number; exhausted: boolean }> {
  const free = (row: StoredOp) => !held.has(recordKey(row.op))
  const rows = held.size > 0 ? view.rows.filter(free) : [...view.rows]
  const want = window - rows.length
  if (want <= 0) return { rows, cached: rows.length, exhausted: false }
  const next = view.rows.length > 0 ? view.last + 1 : view.from
  let range = db.ops.where(':id').aboveOrEqual(next)
  if (held.size > 0) range = range.filter((row) => free(row as StoredOp))
  const more = (await range.limit(want).toArray()) as StoredOp[]
  for (const row of more) rows.push(row)
  return { rows, cached: view.rows.length, exhausted: more.length < want }
}

function groupByRecord(rows: readonly StoredOp[]): Runs {
  const runs: Runs = new Map()
  for (const row of rows) {
    const key = recordKey(row.op)
    const run = runs.get(key)
    if (run) run.push(row)
    else runs.set(key, [row])
  }
  return runs
}

/**
 * The records among `runs` that may exist at the receiver, as far as
 * compaction needs to know: only a run that starts with an insert and later
 * deletes the record can cancel out, and only when the record is not there.
 * Only those are looked up, in the lazy chunk (`existingAmong`,
 * remote-lookup.ts): a cut or count that needs it first runs again once it is
 * loaded (`withLazy`).
 */
async function existingRecords(
  db: OutboxDexie,
  runs: Runs,
  unrecorded: readonly BatchRow[] | undefined,
): Promise<Set<string>> {
  const keys: string[] = []
  for (const [key, run] of runs) {
    if (run[0]?.op.action === 'insert' && run.some((row) => row.op.action === 'delete')) keys.push(key)
  }
  return keys.length > 0 ? lazyNow().existingAmong(db, keys, unrecorded) : new Set()
}

/** A record's queued operations in the window and what they compact to (null: they cancel out). */
export interface CompactedRun {
  key: string
  rows: StoredOp[]
  op: Operation | null
}

/**
 * Queued operations compacted per record (see `compactRecord`), records in order of first appearance. The remote
 * state is looked up only for the records that can cancel out (see `existingRecords`).
 */
export async function compactQueued(
  db: OutboxDexie,
  rows: readonly StoredOp[],
  unrecorded?: readonly BatchRow[],
): Promise<CompactedRun[]> {
  const runs = groupByRecord(rows)
  const remote = await existingRecords(db, runs, unrecorded)
  return Array.from(runs, ([key, run]) => ({
    key,
    rows: run,
    op: compactRecord(
      run.map((row) => row.op),
      remote.has(key),
    ),
  }))
}

function select(runs: readonly CompactedRun[], batchSize: number, rebase: CutOptions['rebase']): Selection {
  const selection: Selection = { operations: [], sourceIds: [], sources: [] }
  for (const { key, rows, op } of runs) {
    for (const row of rows) selection.sources.push(row)
    if (op === null) continue
    const sent = op.baseRevision === undefined || !rebase ? op : withBase(op, rebase(key, op.baseRevision))
    selection.operations.push(sent)
    selection.sourceIds.push(rows.map((row) => row.id))
    if (selection.operations.length >= batchSize) break
  }
  return selection
}

/**
 * Deletes the taken rows from the queue: one range delete when they are the
 * head of the window (always, unless compaction left records behind), else
 * one delete per row. Throws `STALE_VIEW` (aborting the transaction) when
 * a row taken from the view's memory is no longer queued (another tab
 * discarded it): the caller cuts again from a fresh read.
 */
async function deleteTaken(
  db: OutboxDexie,
  rows: readonly StoredOp[],
  cached: number,
  taken: readonly StoredOp[],
): Promise<void> {
  // The window's first rows: the cut takes at least the first record's run, which starts there.
  const first = rows[0] as StoredOp
  const last = rows[taken.length - 1] as StoredOp
  if (taken.every((row) => row.id <= last.id)) {
    // Dexie counts the range before deleting it: the check that every row is still there comes free.
    const deleted = await db.ops.where(':id').between(first.id, last.id, true, true).delete()
    if (cached > 0 && deleted !== taken.length) throw STALE_VIEW
    return
  }
  if (cached > 0) {
    const ids = taken.map((row) => row.id)
    const low = Math.min(...ids)
    const high = Math.max(...ids)
    const expected = rows.filter((row) => row.id >= low && row.id <= high).length
    if ((await db.ops.where(':id').between(low, high, true, true).count()) !== expected) throw STALE_VIEW
  }
  await db.ops.bulkDelete(taken.map((row) => row.id))
}

/** Thrown (and caught by `OutboxDb.nextBatch`) when a queued operation the view held in memory was discarded meanwhile. */
export const STALE_VIEW = new Error('stale cut') // never shown: always caught

/** What is left of the window after the cut took `taken`. */
function viewAfter(rows: readonly StoredOp[], taken: readonly StoredOp[]): QueueView {
  const takenIds = new Set(taken.map((row) => row.id))
  const left = rows.filter((row) => !takenIds.has(row.id))
  const last = (rows.at(-1) as StoredOp).id
  return { from: left[0]?.id ?? last + 1, last, rows: left }
}
