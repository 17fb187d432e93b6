import type { Operation } from '@flagsync/protocol'
import { compactRecord } from './compact.js'
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
   * Records touched by batches cut but not acknowledged locally yet: true
   * when the record exists after them. Wins over `remoteRecords`, which those
   * batches have not updated yet.
   */
  pendingRemote?: ReadonlyMap<string, boolean>
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
 * that `rows` are all still there.
 */
export interface QueueView {
  from: number
  last: number
  rows: readonly StoredOp[]
}

export const EMPTY_VIEW: QueueView = Object.freeze({ from: 0, last: -1, rows: [] })

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
 * tombstones and remoteRecords, when no persisted batch is to be sent first.
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
  for (;;) {
    const { rows, exhausted } = await readWindow(db, view, window)
    if (rows.length === 0) return { batch: undefined, view }
    const runs = groupByRecord(rows)
    const remote = await existingRecords(db, runs, options.pendingRemote)
    const selection = select(runs, remote, options.batchSize)
    await deleteTaken(db, rows, selection.sources)
    view = viewAfter(rows, selection.sources)
    if (selection.operations.length === 0) {
      // Everything in the window cancelled out: nothing is queued for those records any more.
      await clearTombstonesOf(db, selection.sources)
      if (exhausted) return { batch: undefined, view }
      continue
    }
    const batch: BatchRow = {
      batchId: options.newBatchId(),
      operations: selection.operations,
      sourceIds: selection.sourceIds,
      sources: selection.sources,
      attempts: 0,
      nextAttemptAt: 0,
      lastError: null,
      sendingUntil: options.sendingUntil,
      sent: options.sendingUntil > 0,
      createdAt: options.now,
    }
    batch.seq = await db.batches.add(batch)
    return { batch, view }
  }
}

/**
 * The oldest `window` queued operations: the rows the view holds when they
 * are all still queued, then what follows them. `exhausted`: the queue has
 * nothing beyond the rows returned.
 */
async function readWindow(
  db: OutboxDexie,
  view: QueueView,
  window: number,
): Promise<{ rows: StoredOp[]; exhausted: boolean }> {
  let rows: StoredOp[] = []
  let next = view.from
  if (view.rows.length > 0) {
    // A key-only count: no row is read (or copied) to check that none was discarded.
    const still = await db.ops.where(':id').between(view.from, view.last, true, true).count()
    if (still === view.rows.length) {
      rows = [...view.rows]
      next = view.last + 1
    }
  }
  const want = window - rows.length
  if (want <= 0) return { rows, exhausted: false }
  const more = (await db.ops.where(':id').aboveOrEqual(next).limit(want).toArray()) as StoredOp[]
  for (const row of more) rows.push(row)
  return { rows, exhausted: more.length < want }
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
 */
async function existingRecords(
  db: OutboxDexie,
  runs: Runs,
  pendingRemote: ReadonlyMap<string, boolean> | undefined,
): Promise<Set<string>> {
  const remote = new Set<string>()
  const lookup: string[] = []
  for (const [key, run] of runs) {
    if (run[0]?.op.action !== 'insert' || !run.some((row) => row.op.action === 'delete')) continue
    const pending = pendingRemote?.get(key)
    if (pending === undefined) lookup.push(key)
    else if (pending) remote.add(key)
  }
  if (lookup.length > 0) {
    const found = await db.remoteRecords.bulkGet(lookup)
    lookup.forEach((key, i) => {
      if (found[i] !== undefined) remote.add(key)
    })
  }
  return remote
}

function select(runs: Runs, remote: ReadonlySet<string>, batchSize: number): Selection {
  const selection: Selection = { operations: [], sourceIds: [], sources: [] }
  for (const [key, run] of runs) {
    for (const row of run) selection.sources.push(row)
    const compacted = compactRecord(
      run.map((row) => row.op),
      remote.has(key),
    )
    if (compacted === null) continue
    selection.operations.push(compacted)
    selection.sourceIds.push(run.map((row) => row.id))
    if (selection.operations.length >= batchSize) break
  }
  return selection
}

/**
 * Deletes the taken rows from the queue: one range delete when they are the
 * head of the window (always, unless compaction left records behind), else
 * one delete per row.
 */
async function deleteTaken(db: OutboxDexie, rows: readonly StoredOp[], taken: readonly StoredOp[]): Promise<void> {
  const last = rows[taken.length - 1]
  const first = rows[0]
  if (first && last && taken.every((row) => row.id <= last.id)) {
    await db.ops.where(':id').between(first.id, last.id, true, true).delete()
  } else {
    await db.ops.bulkDelete(taken.map((row) => row.id))
  }
}

/** What is left of the window after the cut took `taken`. */
function viewAfter(rows: readonly StoredOp[], taken: readonly StoredOp[]): QueueView {
  const takenIds = new Set(taken.map((row) => row.id))
  const left = rows.filter((row) => !takenIds.has(row.id))
  const last = (rows.at(-1) as StoredOp).id
  return { from: left[0]?.id ?? last + 1, last, rows: left }
}
