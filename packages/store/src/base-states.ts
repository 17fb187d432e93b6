import type { Knex } from 'knex'
import type { DatabaseConfig } from './database-url.js'
import { META } from './migrations.js'
import { selectChangeData, walkChains } from './statements.js'
import type { StateAt, StoredFlag } from './types.js'

/** A record key and a past revision of the store, e.g. an operation's `baseRevision`. */
export type RevisionPair = readonly [key: string, revision: number]

/**
 * Base states read before a write takes the lock (`FlagStore.readStatesAt`): what each record
 * was at each revision, for revisions up to `revision` only. A record's state at a revision
 * the store has issued never changes, so a write adopts them (`WriteOptions.baseStates`) and
 * reads under its lock only what was committed after these were read.
 */
export interface BaseStates {
  scope: string
  /** The store's newest revision when they were read: every state here is at or below it. */
  revision: number
  /**
   * Keyed `${key}@${revision}`. A pair whose record had not changed since its revision is left
   * out: the write answers it from the record it loads, as long as nobody changed it since.
   */
  states: Map<string, StateAt>
}

/**
 * Thrown by `FlagWriter.statesAt` in a write with `deferBaseStates`, before any change-log read
 * under the lock: the write rolls back, and its caller reads these states outside the lock
 * (`FlagStore.readStatesAt`) and writes again with them (`baseStates`).
 */
export class BaseStatesNeeded extends Error {
  override readonly name = 'BaseStatesNeeded'
  readonly scope: string
  readonly pairs: ReadonlyArray<RevisionPair>

  constructor(scope: string, pairs: ReadonlyArray<RevisionPair>) {
    super(`${pairs.length} base state(s) to read before the write lock`)
    this.scope = scope
    this.pairs = pairs
  }
}

export const pairId = (key: string, revision: number) => `${key}@${revision}`

/**
 * Each pair's state at its revision, from the change log, keyed `${key}@${revision}`, with the
 * store's revision: three statements for any number of pairs (the revision and prune marks, one
 * walk, one read of the answers' JSON). Pairs of the same record share one walk of its chain, back from its newest
 * row to the oldest revision asked of it, reading revisions only; the JSON is read for the rows
 * that answer a pair, once each. `known` is false where pruning removed what was needed: the log
 * holds no row of the key at or before the revision, and the revision is in the pruned part of
 * the log or a whole-prefix prune (`pruneChanges`) may have dropped its last state. With
 * `skipUnchanged`, a pair whose answer is its record's newest row (unchanged since) is left out;
 * with `issuedOnly`, so is a pair above the store's revision. With `maxSteps`, a record's walk
 * stops after that many rows: the pairs of a record it left short are returned `unread`.
 */
export async function readStatesAt(
  q: Knex | Knex.Transaction,
  dialect: DatabaseConfig['dialect'],
  scope: string,
  given: ReadonlyArray<RevisionPair>,
  options: { skipUnchanged?: boolean; issuedOnly?: boolean; maxSteps?: number } = {},
): Promise<{ revision: number; states: Map<string, StateAt>; unread: RevisionPair[] }> {
  const unread: RevisionPair[] = []
  const out = new Map<string, StateAt>()
  // The store's revision and the prune marks in one statement.
  const marks = new Map<string, number>()
  const names = ['revision', META.prunedThrough, META.prefixPrunedThrough]
  for (const row of (await q('flagsync_meta').whereIn('name', names).select('name', 'value')) as MetaRow[]) {
    marks.set(row.name, Number(row.value))
  }
  const [revision, prunedThrough, prefixPruned] = names.map((name) => marks.get(name) ?? 0) as [number, number, number]
  const pairs = options.issuedOnly ? given.filter((pair) => pair[1] <= revision) : given
  if (pairs.length === 0) return { revision, states: out, unread }
  // Per record, the oldest and newest revision asked of it: one walk down to the oldest.
  const range = new Map<string, [oldest: number, newest: number]>()
  for (const [key, revision] of pairs) {
    const known = range.get(key)
    if (!known) range.set(key, [revision, revision])
    else range.set(key, [Math.min(known[0], revision), Math.max(known[1], revision)])
  }
  const chains = new Map<string, { head: number; rows: number[]; cut: boolean }>()
  for (const row of await walkChains(
    q,
    dialect,
    scope,
    [...range].map(([key, [a, b]]) => [key, a, b] as const),
    options.maxSteps,
  )) {
    const chain = chains.get(row.key) ?? { head: Number(row.head), rows: [], cut: false }
    if (Number(row.cut) === 1 || row.cut === true) chain.cut = true
    else chain.rows.push(Number(row.revision))
    chains.set(row.key, chain)
  }
  for (const chain of chains.values()) chain.rows.sort((a, b) => b - a)
  // Each distinct pair's answer: the record's newest surviving row at or before the revision.
  const answers = new Map<string, { revision: number; at: number | null }>()
  for (const [key, revision] of pairs) {
    const id = pairId(key, revision)
    if (answers.has(id)) continue
    const chain = chains.get(key)
    // A walk cut short of this record's oldest revision answers none of its pairs: left to the caller.
    if (chain?.cut) {
      unread.push([key, revision])
      continue
    }
    const at = chain?.rows.find((r) => r <= revision) ?? null
    if (options.skipUnchanged && at !== null && at === chain?.head) continue
    answers.set(id, { revision, at })
  }
  const wanted = new Set<number>()
  for (const { at } of answers.values()) if (at !== null) wanted.add(at)
  const data = new Map<number, string | null>()
  if (wanted.size > 0) {
    for (const row of await selectChangeData(q, dialect, [...wanted])) data.set(Number(row.revision), row.data)
  }
  for (const [id, { revision, at }] of answers) {
    // A row that survived pruning is exact (pruning drops a row only together with every older
    // row of the record); no row means absent, unless pruning may have dropped the record's state.
    const found = at !== null && data.has(at)
    const known = found || (revision >= prunedThrough && prefixPruned === 0)
    const json = found ? (data.get(at as number) ?? null) : null
    out.set(id, { flag: known && json !== null ? (JSON.parse(json) as StoredFlag) : null, known })
  }
  return { revision, states: out, unread }
}

interface MetaRow {
  name: string
  value: number | string
}
