// The shapes the impression store reads and writes (see store.ts for its functions).

export type Dialect = 'sqlite' | 'postgres'

/** A validated impression ready to store: the context already serialized, evaluated_at resolved. */
export interface ImpressionRow {
  flag_key: string
  user_id: string | null
  value: string
  context: string | null
  evaluated_at: number
}

/** One request's impressions for one environment. */
export interface IngestBatch {
  environmentId: string
  rows: readonly ImpressionRow[]
  receivedAt: number
}

export interface ImpressionJson {
  id: number
  flag_key: string
  user_id: string | null
  value: string
  context: Record<string, unknown> | null
  evaluated_at: string
}

export interface ImpressionStatsJson {
  flag_key: string
  total: number
  true_count: number
  false_count: number
  unique_users: number
  last_seen: string
  /** The most evaluated served values (lifetime counts), most evaluated first. */
  values: Array<{ value: string; count: number }>
}

/** A page of the stats route (sent when the caller pages with `limit` or `cursor`). */
export interface ImpressionStatsPage {
  items: ImpressionStatsJson[]
  /** The `cursor` of the next page; null on the last one. */
  next_cursor: string | null
}

export interface PruneOptions {
  /** Rows deleted per transaction (default 5000), so ingest waits at most one chunk for the write lock. */
  chunk?: number
}
