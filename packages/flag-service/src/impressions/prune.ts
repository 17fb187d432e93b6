import { TABLES } from '@flagsync/store'
import type { Knex } from 'knex'
import { forgetInternedIds } from './intern.js'
import { byNumber, type Num, rowsOf } from './sql-helpers.js'
import { IMPRESSION_TABLES as T } from './tables.js'
import type { PruneOptions } from './types.js'

type GoneRow = { env_id: Num; flag_id: Num; value_id: Num; series_id: Num }

/**
 * Deletes the impressions received before `cutoff` (epoch ms), oldest first,
 * in transactions of `chunk` rows, and takes them off the stored-row counters
 * (the list's totals). The lifetime stats keep counting them. Each chunk
 * looks only at the `chunk` lowest ids, so the job never scans the table: ids
 * grow with the receive time, and the first row young enough ends the run.
 * Returns the number of rows deleted.
 */
export async function pruneImpressions(knex: Knex, cutoff: number, options: PruneOptions = {}): Promise<number> {
  const chunk = Math.max(1, Math.floor(options.chunk ?? 5000))
  let deleted = 0
  for (;;) {
    const n = await knex.transaction(async (trx) => {
      const gone = rowsOf<GoneRow>(
        await trx.raw(
          `delete from ${T.impressions} where id in (select id from ${T.impressions} order by id limit ?) and received_at < ? returning env_id, flag_id, value_id, series_id`,
          [chunk, cutoff],
        ),
      )
      await uncount(trx, gone)
      return gone.length
    })
    deleted += n
    if (n < chunk) return deleted
  }
}

/** Takes deleted rows off the stored-row counters, in the same table order as ingest: envs → values → series → flags. */
async function uncount(trx: Knex.Transaction, gone: GoneRow[]): Promise<void> {
  const tally = (column: 'env_id' | 'value_id' | 'series_id' | 'flag_id') => {
    const counts = new Map<number, number>()
    for (const r of gone) counts.set(Number(r[column]), (counts.get(Number(r[column])) ?? 0) + 1)
    return [...counts.entries()].sort((a, b) => byNumber(a[0], b[0]))
  }
  for (const [table, column] of [
    [T.envs, 'env_id'],
    [T.values, 'value_id'],
    [T.series, 'series_id'],
    [T.flags, 'flag_id'],
  ] as const) {
    for (const [id, n] of tally(column)) {
      await trx(table)
        .where('id', id)
        .update({ stored: trx.raw('stored - ?', [n]) })
    }
  }
}

/**
 * Bounds the stats: deletes the counters of each flag key the environment no
 * longer has (not a flag now, and its delete no longer in the change log)
 * once none of its impressions is kept, with its series and (flag, user)
 * pairs (cascades); then the values no kept impression uses any more. Runs
 * after `pruneImpressions`, so a deleted flag's stats go one retention period
 * after its last impression. `chunk` rows per transaction. Returns the flag
 * keys forgotten.
 */
export async function forgetDeletedFlags(knex: Knex, options: PruneOptions = {}): Promise<number> {
  const chunk = Math.max(1, Math.floor(options.chunk ?? 500))
  const flags = await deleteInChunks(knex, chunk, (trx) =>
    trx(T.flags)
      .where('stored', 0)
      .whereIn(
        'id',
        trx(T.flags)
          .select('id')
          .where('stored', 0)
          .whereNotExists((q) => {
            q.select('scope')
              .from(TABLES.heads)
              .whereRaw('?? = ??', [`${TABLES.heads}.scope`, `${T.flags}.environment_id`])
              .whereRaw('?? = ??', [`${TABLES.heads}.key`, `${T.flags}.flag_key`])
          })
          .whereNotExists((q) => {
            q.select('scope')
              .from(TABLES.changes)
              .whereRaw('?? = ??', [`${TABLES.changes}.scope`, `${T.flags}.environment_id`])
              .whereRaw('?? = ??', [`${TABLES.changes}.key`, `${T.flags}.flag_key`])
              .whereNull(`${TABLES.changes}.data`)
          })
          .orderBy('id')
          .limit(chunk),
      )
      .delete(),
  )
  const values = await deleteInChunks(knex, chunk, (trx) =>
    trx(T.values)
      .where('stored', 0)
      .whereIn(
        'id',
        trx(T.values)
          .select('id')
          .where('stored', 0)
          .whereNotExists((q) => {
            q.select('id')
              .from(T.series)
              .whereRaw('?? = ??', [`${T.series}.value_id`, `${T.values}.id`])
          })
          .orderBy('id')
          .limit(chunk),
      )
      .delete(),
  )
  if (flags + values > 0) forgetInternedIds()
  return flags
}

/** Runs `remove` (one chunk's delete, answering its count) in transactions until a chunk comes back short. */
async function deleteInChunks(
  knex: Knex,
  chunk: number,
  remove: (trx: Knex.Transaction) => Promise<number>,
): Promise<number> {
  let total = 0
  for (;;) {
    const n = await knex.transaction(remove)
    total += n
    if (n < chunk) return total
  }
}
