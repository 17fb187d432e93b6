import { TABLES } from '@flagsync/store'
import type { Knex } from 'knex'
import { chunks } from './sql-helpers.js'
import type { ImpressionRow } from './types.js'

/**
 * A flag key the environment has: one of its flags now, or a flag deleted
 * whose delete is still in the change log (an SDK may report a flag it
 * evaluated just before the delete reached it). The change-log retention
 * forgets deleted flags, and impressions of them then count as unknown too.
 */
async function knownFlagKeys(knex: Knex, environmentId: string, keys: readonly string[]): Promise<Set<string>> {
  const known = new Set<string>()
  for (const chunk of chunks(keys, 500)) {
    // The heads' primary key (scope, key) and the change log's partial index of deletes answer both halves.
    const rows = (await knex(TABLES.heads)
      .where('scope', environmentId)
      .whereIn('key', chunk)
      .select('key')
      .union((q) => {
        q.from(TABLES.changes).where('scope', environmentId).whereIn('key', chunk).whereNull('data').select('key')
      })) as Array<{ key: string }>
    for (const row of rows) known.add(row.key)
  }
  return known
}

/** How long a key found known is taken as known without asking the database again (runtime clock, ms). */
export const KNOWN_KEY_TTL_MS = 60_000

/** Most keys remembered per process; more clears the memory (it only saves queries). */
const MAX_REMEMBERED = 50_000

/** What ingest does with a batch: the rows to store and what it leaves out. */
export interface SortedBatch {
  rows: ImpressionRow[]
  /** Impressions left out: their flag key is unknown to the environment. */
  ignored: number
  /** The distinct unknown keys, in the batch's order. */
  unknownKeys: string[]
}

/**
 * The keys each environment has, remembered for `KNOWN_KEY_TTL_MS` once
 * found: a batch of known flags (the usual case) costs no query. A key not
 * found is asked again with the next batch, so a flag created a moment ago
 * is known at once.
 */
export class KnownKeys {
  private readonly until = new Map<string, number>()
  constructor(
    private readonly knex: Knex,
    private readonly clock: () => number,
  ) {}

  /** Splits a batch into the rows of keys the environment has and the rest. */
  async sort(environmentId: string, rows: ImpressionRow[]): Promise<SortedBatch> {
    const now = this.clock()
    const asked = new Set<string>()
    for (const row of rows) {
      const until = this.until.get(memoryKey(environmentId, row.flag_key))
      if (until === undefined || until <= now) asked.add(row.flag_key)
    }
    if (asked.size === 0) return { rows, ignored: 0, unknownKeys: [] }
    const found = await knownFlagKeys(this.knex, environmentId, [...asked])
    if (this.until.size + found.size > MAX_REMEMBERED) this.until.clear()
    for (const key of found) this.until.set(memoryKey(environmentId, key), now + KNOWN_KEY_TTL_MS)
    if (found.size === asked.size) return { rows, ignored: 0, unknownKeys: [] }
    const kept: ImpressionRow[] = []
    const unknown = new Set<string>()
    for (const row of rows) {
      if (asked.has(row.flag_key) && !found.has(row.flag_key)) unknown.add(row.flag_key)
      else kept.push(row)
    }
    return { rows: kept, ignored: rows.length - kept.length, unknownKeys: [...unknown] }
  }
}

const memoryKey = (environmentId: string, key: string) => `${environmentId}\u0000${key}`
