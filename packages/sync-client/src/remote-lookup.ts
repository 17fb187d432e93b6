import type { LazyKit } from './lazy-kit.js'
import type { OutboxDexie } from './outbox-schema.js'

// Looking records up in `remoteKeys` (see remote-records.ts): only compaction of a queued run that starts with an
// insert and deletes the record needs it (does the delete still have to go out?), so it is part of the lazy chunk (see
// lazy-ops.ts). A cut that needs it before the chunk is loaded aborts, and runs again once it is (`withLazy`, lazy.ts).

/** The lookup, bound to what it uses from the eager modules. */
export function lookupOps({ hashes, FILTER_PROBES }: LazyKit) {
  return { remoteAmong, filterMayHold }

  /** Whether the filter may hold `key` (never false for a key it was built with). */
  function filterMayHold(filter: Uint32Array, key: string): boolean {
    return mayHold(filter, hashes(key))
  }

  function mayHold(filter: Uint32Array, [h1, h2]: [number, number]): boolean {
    const mask = filter.length * 32 - 1
    for (let i = 0; i < FILTER_PROBES; i++) {
      const bit = (h1 + i * h2) & mask
      if (((filter[bit >>> 5] as number) & (1 << (bit & 31))) === 0) return false
    }
    return true
  }

  /**
   * Which of `keys` may exist at the receiver (call inside a transaction over
   * `remoteKeys` and `remoteFilters`): those whose newest row lists them in
   * `keys` rather than in `gone`. Reads every filter, and the rows whose filter
   * may hold one of the keys.
   */
  async function remoteAmong(db: OutboxDexie, keys: readonly string[]): Promise<Set<string>> {
    const found = new Set<string>()
    if (keys.length === 0) return found
    const filters = await db.remoteFilters.toArray()
    const probes = keys.map(hashes)
    const candidates = filters.filter((f) => probes.some((p) => mayHold(f.bits, p))).map((f) => f.id)
    if (candidates.length === 0) return found
    const wanted = new Set(keys)
    const newest = new Map<string, { id: number; exists: boolean }>()
    const rows = await db.remoteKeys.bulkGet(candidates)
    rows.forEach((row, i) => {
      if (!row) return
      const id = candidates[i] as number
      const note = (key: string, exists: boolean) => {
        if (wanted.has(key) && (newest.get(key)?.id ?? -1) < id) newest.set(key, { id, exists })
      }
      for (const key of row.keys) note(key, true)
      for (const key of row.gone) note(key, false)
    })
    for (const [key, { exists }] of newest) if (exists) found.add(key)
    return found
  }
}
