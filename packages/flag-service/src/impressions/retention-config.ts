import { envInt } from '@flagsync/server-kit'

// Settings only (no store imports), so the service config can read them without pulling the feature in.

const DAY_MS = 24 * 60 * 60 * 1000

export interface ImpressionRetention {
  /** Impressions received longer ago than this are deleted; 0 keeps them forever. */
  maxAgeMs: number
  /** How often the job runs (default hourly); the first run is `firstRunMs` after start. */
  intervalMs: number
  firstRunMs: number
  /** Rows per delete transaction (default 5000). */
  chunk?: number
}

const DEFAULT_RETENTION_DAYS = 30

/**
 * `IMPRESSION_RETENTION_DAYS` (default 30, 0 = keep forever) and
 * `IMPRESSION_PRUNE_INTERVAL_MINUTES` (default 60). Malformed values stop
 * startup with a message naming the variable, like every other setting.
 */
export function retentionFromEnv(env: Record<string, string | undefined>): ImpressionRetention {
  const days = envInt(env, 'IMPRESSION_RETENTION_DAYS', DEFAULT_RETENTION_DAYS, 0, 36_500)
  const minutes = envInt(env, 'IMPRESSION_PRUNE_INTERVAL_MINUTES', 60, 1, 10_080)
  return { maxAgeMs: days * DAY_MS, intervalMs: minutes * 60_000, firstRunMs: 60_000 }
}
