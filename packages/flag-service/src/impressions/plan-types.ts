import type { Knex } from 'knex'

// What one ingest transaction writes, worked out before it runs (plan.ts) and written by the dialect's
// statements (sql-sqlite.ts, sql-postgres.ts).

/** What a transaction writes: the statements' bindings, ready before it begins. */
export interface Plan {
  /** One entry per INSERT of rows (ROWS_PER_STATEMENT each): its bindings. */
  rows: Knex.RawBinding[][]
  /** One entry per INSERT of (flag, user) pairs (sorted, ROWS_PER_STATEMENT each): its bindings. */
  pairs: Knex.RawBinding[][]
  rowCount: number
  pairCount: number
  envs: StoredIncrement[]
  values: StoredIncrement[]
  series: StoredIncrement[]
  flags: Map<number, FlagTally>
}

/** A flag's share of a transaction: what it adds to the flag's lifetime stats and stored rows. */
export interface FlagTally {
  environmentId: string
  key: string
  total: number
  trueCount: number
  falseCount: number
  newUsers: number
  lastSeen: number
}

/** `[id, the other NOT NULL key columns, rows to add]` of an interned row. */
export type StoredIncrement = [number, Array<string | number>, number]

/** env_id, flag_id, value_id, series_id, user_id, context, evaluated_at, received_at */
export type ImpressionTuple = [number, number, number, number, string | null, string | null, number, number]

/** The columns of an ImpressionTuple, in its order. */
export const ROW_COLUMNS = 'env_id, flag_id, value_id, series_id, user_id, context, evaluated_at, received_at'
