import type { Operation } from '@flagsync/protocol'
import { existenceAfter, type OutboxDexie, type RemoteRow } from './outbox-schema.js'

/**
 * What the outbox knows about records at the receiver, for compaction: a
 * record this outbox delivered (and did not delete since) may exist there, so
 * an insert … delete of it must still send the delete.
 *
 * Stored as one `remoteKeys` row per acknowledged batch, `{ keys, gone }`:
 * the record keys the batch leaves existing and those it deletes, both
 * multiEntry indexes. Recording a batch is one row write (a few for batches
 * larger than `ROW_KEYS`) instead of one write per record, and a record's
 * state is that of the newest row naming it. Reads are only needed for
 * records whose queued run starts with an insert and deletes the record, one
 * index walk per index for all of them.
 *
 * So the table does not grow with every batch, it is folded from time to
 * time (see `foldDue`): the newest fact about each record is kept, rows whose
 * facts are all still current and which are at least half full stay as they
 * are, the rest are rewritten as rows of up to `ROW_KEYS` existing records,
 * and deleted records are dropped. After a fold the table holds each record
 * that exists remotely (as far as this outbox knows) once, like the one row
 * per record of earlier versions.
 */

/** Most record keys in one row (written by a batch, a fold or the migration of an earlier version's rows). */
export const ROW_KEYS = 500

/** A fold is due once the table has at least this many rows, and at least twice as many as after the last fold. */
export const FOLD_MIN_ROWS = 64

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
  const rows = remoteRows(keys, gone)
  // Both requests go out at once: the count runs after the add in the same transaction.
  const [, count] = await Promise.all([
    rows.length === 0
      ? undefined
      : rows.length === 1
        ? db.remoteKeys.add(rows[0] as RemoteRow)
        : db.remoteKeys.bulkAdd(rows),
    db.remoteKeys.count(),
  ])
  return count
}

/** Whether a fold is due with `rows` rows in the table, `afterLastFold` of them left by this instance's last fold (0: none yet). */
export function foldDue(rows: number, afterLastFold: number): boolean {
  return rows >= Math.max(FOLD_MIN_ROWS, 2 * afterLastFold)
}

/**
 * Folds the table (inside a rw transaction over `remoteKeys`): keeps the
 * newest fact about each record, drops deleted records and rewrites the rows
 * that changed or are less than half full as rows of up to `ROW_KEYS` keys.
 * Resolves the number of rows left. What a lookup answers is unchanged.
 */
export async function foldRemote(db: OutboxDexie): Promise<number> {
  const rows = await db.remoteKeys.toArray()
  const decided = new Set<string>()
  const kept: string[][] = new Array(rows.length)
  for (let i = rows.length - 1; i >= 0; i--) {
    const row = rows[i] as RemoteRow
    for (const key of row.gone) decided.add(key)
    const current: string[] = []
    for (const key of row.keys) {
      if (decided.has(key)) continue
      decided.add(key)
      current.push(key)
    }
    kept[i] = current
  }
  const rewrite: number[] = []
  const pool: string[] = []
  let changed = false
  rows.forEach((row, i) => {
    const current = kept[i] as string[]
    const unchanged = row.gone.length === 0 && current.length === row.keys.length
    if (unchanged && current.length >= ROW_KEYS / 2) return
    changed ||= !unchanged
    rewrite.push(row.id as number)
    for (const key of current) pool.push(key)
  })
  // Nothing dropped and at most one small row (e.g. the last one the previous fold wrote): nothing to do.
  if (!changed && rewrite.length <= 1) return rows.length
  const staying = rows.length - rewrite.length
  const fresh = remoteRows(pool)
  await db.remoteKeys.bulkDelete(rewrite)
  if (fresh.length > 0) await db.remoteKeys.bulkAdd(fresh)
  return staying + fresh.length
}

/**
 * Which of `keys` may exist at the receiver (call inside a transaction over
 * `remoteKeys`): those whose newest row lists them in `keys` rather than in
 * `gone`. Reads only the two indexes, never the rows.
 */
export async function remoteAmong(db: OutboxDexie, keys: readonly string[]): Promise<Set<string>> {
  const found = new Set<string>()
  if (keys.length === 0) return found
  const newest = async (index: 'keys' | 'gone'): Promise<Map<string, number>> => {
    const ids = new Map<string, number>()
    await db.remoteKeys
      .where(index)
      .anyOf([...keys])
      .eachKey((key, cursor) => {
        const id = cursor.primaryKey as number
        if ((ids.get(key as string) ?? -1) < id) ids.set(key as string, id)
      })
    return ids
  }
  const [existing, deleted] = await Promise.all([newest('keys'), newest('gone')])
  for (const [key, id] of existing) if (id > (deleted.get(key) ?? -1)) found.add(key)
  return found
}
