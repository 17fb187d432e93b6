import { Dexie } from 'dexie'
import type { OutboxDexie, RemoteRow } from './outbox-schema.js'

// The Bloom filters of `remoteKeys` rows (see remote-records.ts), in `remoteFilters` under the row's id. Only the
// lookup and the fold use them, so they are built there, in the lazy chunk, and never at acknowledgement: a row
// without a filter is one the lookup has to read (and, in a read-write transaction, files the filter of for the next
// lookups). Rows never change once written (a fold deletes and adds), so a filter stays right as long as its row is
// there. Earlier versions filed each filter with its row; those are read the same way.

/** Filter bits per record key: with 4 probes, about 0.2 % false positives (a row read for nothing). */
const FILTER_BITS_PER_KEY = 16
const FILTER_PROBES = 4

/** Two 32-bit hashes of a record key (FNV-1a with two offsets; probes are h1 + i·h2). */
export function hashes(key: string): [number, number] {
  let h1 = 0x811c9dc5
  let h2 = 0x01000193
  for (let i = 0; i < key.length; i++) {
    const c = key.charCodeAt(i)
    h1 = Math.imul(h1 ^ c, 0x01000193)
    h2 = Math.imul(h2 ^ c, 0x5bd1e995)
  }
  return [h1 >>> 0, (h2 >>> 0) | 1]
}

/** The Bloom filter of a row: every key it names, existing or gone. */
export function filterOf(row: RemoteRow): Uint32Array {
  const n = row.keys.length + row.gone.length
  let bits = 64
  while (bits < n * FILTER_BITS_PER_KEY) bits *= 2
  const filter = new Uint32Array(bits / 32)
  const set = (key: string) => {
    const [h1, h2] = hashes(key)
    for (let i = 0; i < FILTER_PROBES; i++) {
      const bit = (h1 + i * h2) & (bits - 1)
      filter[bit >>> 5] = (filter[bit >>> 5] as number) | (1 << (bit & 31))
    }
  }
  for (const key of row.keys) set(key)
  for (const key of row.gone) set(key)
  return filter
}

/** Whether the filter may hold the key hashed to `[h1, h2]` (never false for a key it was built with). */
export function mayHold(filter: Uint32Array, [h1, h2]: [number, number]): boolean {
  const mask = filter.length * 32 - 1
  for (let i = 0; i < FILTER_PROBES; i++) {
    const bit = (h1 + i * h2) & mask
    if (((filter[bit >>> 5] as number) & (1 << (bit & 31))) === 0) return false
  }
  return true
}

/**
 * Files the filters of `rows` (rows read back, with their ids) when the current transaction may write
 * `remoteFilters`; in a read-only one (the pending count) they are built again by a later lookup.
 */
export async function fileFilters(db: OutboxDexie, rows: readonly RemoteRow[]): Promise<void> {
  const tx = Dexie.currentTransaction
  if (rows.length === 0 || tx?.mode !== 'readwrite' || !tx.storeNames.includes('remoteFilters')) return
  await db.remoteFilters.bulkPut(rows.map((row) => ({ id: row.id as number, bits: filterOf(row) })))
}
