import { envInt } from '@flagsync/server-kit'
import type { ServiceRuntime } from '../service-runtime.js'
import { pruneImpressions } from './store.js'

export const DAY_MS = 24 * 60 * 60 * 1000

export interface ImpressionRetention {
  /** Impressions received longer ago than this are deleted; 0 keeps them forever. */
  maxAgeMs: number
  /** How often the job runs (default hourly); the first run is `firstRunMs` after start. */
  intervalMs: number
  firstRunMs: number
  /** Rows per delete transaction (default 5000). */
  chunk?: number
}

export const DEFAULT_RETENTION_DAYS = 30

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

/** Deletes the impressions older than the retention age now (by the runtime's clock); returns how many. */
export function pruneExpiredImpressions(
  runtime: ServiceRuntime,
  retention: Pick<ImpressionRetention, 'maxAgeMs' | 'chunk'>,
): Promise<number> {
  if (retention.maxAgeMs <= 0) return Promise.resolve(0)
  return pruneImpressions(runtime.knex, runtime.clock() - retention.maxAgeMs, { chunk: retention.chunk })
}

/**
 * Runs the pruning job on a timer for the runtime's life: unref'd (it never
 * keeps a process alive), one run at a time, stopped on `runtime.close()`
 * after waiting out a run in progress. Failures are logged and retried at the
 * next interval. Several instances on one database may all run it: a row is
 * deleted (and uncounted) by exactly one of them.
 */
export function startImpressionRetention(runtime: ServiceRuntime, retention: ImpressionRetention): () => Promise<void> {
  if (retention.maxAgeMs <= 0) return async () => {}
  let timer: ReturnType<typeof setTimeout> | undefined
  let running: Promise<void> | undefined
  let stopped = false
  const schedule = (ms: number) => {
    if (stopped) return
    timer = setTimeout(run, ms)
    timer.unref()
  }
  const run = () => {
    running = pruneExpiredImpressions(runtime, retention).then(
      (n) => {
        if (n > 0) runtime.logger.info(`impression retention deleted ${n} impressions`)
      },
      (err: unknown) => runtime.logger.warn({ err }, 'impression retention failed; retrying at the next interval'),
    )
    void running.finally(() => {
      running = undefined
      schedule(retention.intervalMs)
    })
  }
  schedule(retention.firstRunMs)
  const stop = async () => {
    stopped = true
    if (timer !== undefined) clearTimeout(timer)
    await running
  }
  runtime.onClose(stop)
  return stop
}
