import type { LazyKit } from './lazy-kit.js'
import type { BatchRow, OutboxDexie, RemoteRow } from './outbox-schema.js'
import { fileFilters, hashes, mayHold } from './remote-filter.js'

// Looking records up in `remoteKeys` (see remote-records.ts): only compaction of a queued run that starts with an
// insert and deletes the record needs it (does the delete still have to go out?), so it is part of the lazy chunk (see
// lazy-ops.ts). A cut that needs it before the chunk is loaded aborts, and runs again once it is (`withLazy`, lazy.ts).

/** The lookup, bound to what it uses from the eager modules. */
export function lookupOps({ recordKey }: LazyKit) {
  return { existingAmong, remoteAmong, filterMayHold }

  /**
   * Which of `keys` may exist at the receiver for compaction (see `existingRecords`, cut-batch.ts): as the
   * `unrecorded` batches (delivered or on the wire, their acknowledgement not recorded yet) leave them, else as
   * `remoteKeys` says.
   */
  async function existingAmong(
    db: OutboxDexie,
    keys: readonly string[],
    unrecorded: readonly BatchRow[] = [],
  ): Promise<Set<string>> {
    // As `existenceAfter` (outbox-schema.ts) answers: the last operation on a record wins.
    const pending = new Map<string, boolean>()
    for (const batch of unrecorded)
      for (const op of batch.operations) pending.set(recordKey(op), op.action !== 'delete')
    const remote = new Set<string>()
    const lookup: string[] = []
    for (const key of keys) {
      const exists = pending.get(key)
      if (exists === undefined) lookup.push(key)
      else if (exists) remote.add(key)
    }
    for (const key of await remoteAmong(db, lookup)) remote.add(key)
    return remote
  }

  /** Whether the filter may hold `key` (never false for a key it was built with). */
  function filterMayHold(filter: Uint32Array, key: string): boolean {
    return mayHold(filter, hashes(key))
  }

  /**
   * Which of `keys` may exist at the receiver (call inside a transaction over
   * `remoteKeys` and `remoteFilters`): those whose newest row lists them in
   * `keys` rather than in `gone`. Reads the row ids and every filter, then the
   * rows whose filter may hold one of the keys and the rows without a filter
   * (written since they were last looked up); in a read-write transaction it
   * files the filters of the latter, so each row is read in full for nothing
   * at most once.
   */
  async function remoteAmong(db: OutboxDexie, keys: readonly string[]): Promise<Set<string>> {
    const found = new Set<string>()
    if (keys.length === 0) return found
    const ids = await db.remoteKeys.toCollection().primaryKeys()
    const filters = new Map((await db.remoteFilters.toArray()).map((f) => [f.id, f.bits]))
    const probes = keys.map(hashes)
    const candidates = ids.filter((id) => {
      const bits = filters.get(id)
      return bits === undefined || probes.some((p) => mayHold(bits, p))
    })
    if (candidates.length === 0) return found
    const wanted = new Set(keys)
    const newest = new Map<string, { id: number; exists: boolean }>()
    const unfiltered: RemoteRow[] = []
    const rows = await db.remoteKeys.bulkGet(candidates)
    rows.forEach((row, i) => {
      if (!row) return
      const id = candidates[i] as number
      if (!filters.has(id)) unfiltered.push(row)
      const note = (key: string, exists: boolean) => {
        if (wanted.has(key) && (newest.get(key)?.id ?? -1) < id) newest.set(key, { id, exists })
      }
      for (const key of row.keys) note(key, true)
      for (const key of row.gone) note(key, false)
    })
    await fileFilters(db, unfiltered)
    for (const [key, { exists }] of newest) if (exists) found.add(key)
    return found
  }
}
