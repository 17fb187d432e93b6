import type { Operation } from '@flagsync/protocol'
import { existenceAfter, type OutboxDexie, type RemoteRow } from './outbox-schema.js'

/**
 * What the outbox knows about records at the receiver, for compaction: a
 * record this outbox delivered (and did not delete since) may exist there, so
 * an insert … delete of it must still send the delete.
 *
 * Stored as one `remoteKeys` row per acknowledged batch, `{ keys, gone }`:
 * the record keys the batch leaves existing and those it deletes, not
 * indexed. Recording a batch is one row write and a count (more writes for
 * batches larger than `ROW_KEYS`) instead of one write per record as in
 * earlier versions; a multiEntry index on the keys would cost an index entry
 * per record again (on fake-indexeddb about half as much as a row write per
 * record, measured). A record's state is that of the newest row naming it.
 * Reads are only needed for records whose queued run starts with an insert
 * and deletes the record: the row ids and all Bloom filters in
 * `remoteFilters` are read (about 1 KB per row), then only the rows whose
 * filter may hold one of those records and the rows that have no filter yet.
 * Filters are built by the lookup and the fold, in the lazy chunk (see
 * remote-filter.ts, remote-lookup.ts), not at acknowledgement; earlier
 * versions wrote one with every row, and those are read the same way.
 *
 * So the table does not grow with every batch, it is folded from time to
 * time (see `foldDue`): the newest fact about each record is kept, rows whose
 * facts are all still current and which are at least half full stay as they
 * are, the rest are rewritten as rows of up to `ROW_KEYS` existing records,
 * and deleted records are dropped. After a fold the table holds each record
 * that exists remotely (as far as this outbox knows) once, like the one row
 * per record of earlier versions (see remote-fold.ts, in the lazy chunk).
 */

/** Most record keys in one row (written by a batch, a fold or the migration of an earlier version's rows). */
export const ROW_KEYS = 500

/** A fold is due once the table has at least this many rows, and at least twice as many as after the last fold. */
export const FOLD_MIN_ROWS = 64

/** Adds rows (inside a rw transaction over `remoteKeys`); their filters are built later (see remote-filter.ts). */
export async function addRemoteRows(db: Pick<OutboxDexie, 'remoteKeys'>, rows: RemoteRow[]): Promise<void> {
  if (rows.length > 0) await db.remoteKeys.bulkAdd(rows)
}

/** Rows of at most `ROW_KEYS` keys and gone keys together, for the record keys given. */
export function remoteRows(keys: readonly string[], gone: readonly string[] = []): RemoteRow[] {
  const rows: RemoteRow[] = []
  for (let i = 0; i < keys.length + gone.length; i += ROW_KEYS) {
    const end = i + ROW_KEYS
    rows.push({
      keys: keys.slice(i, end),
      gone: gone.slice(Math.max(0, i - keys.length), Math.max(0, end - keys.length)),
    })
  }
  return rows
}

/**
 * Records what a delivered batch leaves at the receiver (call inside a rw
 * transaction over `remoteKeys`): one row, or one per `ROW_KEYS` records.
 * Resolves the number of rows in the table afterwards.
 */
export async function recordDelivered(db: OutboxDexie, operations: readonly Operation[]): Promise<number> {
  const keys: string[] = []
  const gone: string[] = []
  for (const [key, exists] of existenceAfter(operations)) (exists ? keys : gone).push(key)
  await addRemoteRows(db, remoteRows(keys, gone))
  return db.remoteKeys.count()
}

/** Whether a fold is due with `rows` rows in the table, `afterLastFold` of them left by this instance's last fold (0: none yet). */
export function foldDue(rows: number, afterLastFold: number): boolean {
  return rows >= Math.max(FOLD_MIN_ROWS, 2 * afterLastFold)
}
