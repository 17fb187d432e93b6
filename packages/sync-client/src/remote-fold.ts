import type { LazyKit } from './lazy-kit.js'
import type { OutboxDexie, RemoteRow } from './outbox-schema.js'
import { fileFilters } from './remote-filter.js'

// Folding the `remoteKeys` table (see remote-records.ts): due once per doubling of the table, at least 64 rows, so a
// page that delivers a few batches never runs it. Part of the lazy chunk (see lazy-ops.ts); `OutboxDb.complete` folds
// only once the chunk is loaded, and a fold put off that way happens at a later acknowledgement (lookups answer the
// same before and after a fold, so putting one off changes nothing but the table's size).

/** The fold, bound to what it uses from the eager modules. */
export function foldOps({ remoteRows, ROW_KEYS }: LazyKit) {
  return { foldRemote }

  /**
   * Folds the table (inside a rw transaction over `remoteKeys` and `remoteFilters`): keeps the
   * newest fact about each record, drops deleted records and rewrites the rows
   * that changed or are less than half full as rows of up to `ROW_KEYS` keys.
   * Every row left then has its filter (see remote-filter.ts).
   * Resolves the number of rows left. What a lookup answers is unchanged.
   */
  async function foldRemote(db: OutboxDexie): Promise<number> {
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
    await db.remoteFilters.bulkDelete(rewrite)
    const ids = await db.remoteKeys.bulkAdd(fresh, { allKeys: true })
    fresh.forEach((row, i) => {
      row.id = ids[i] as number
    })
    // Rows staying as they are that were acknowledged since the last lookup have no filter yet.
    const filtered = new Set(await db.remoteFilters.toCollection().primaryKeys())
    const rewritten = new Set(rewrite)
    const unfiltered = rows.filter((row) => !rewritten.has(row.id as number) && !filtered.has(row.id as number))
    await fileFilters(db, [...unfiltered, ...fresh])
    return staying + fresh.length
  }
}
