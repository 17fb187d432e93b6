import type { ServiceRuntime } from '../service-runtime.js'
import { forgetDeletedFlags, pruneImpressions } from './prune.js'

export { type ImpressionRetention, retentionFromEnv } from './retention-config.js'

import type { ImpressionRetention } from './retention-config.js'

/**
 * Deletes the impressions older than the retention age now (by the runtime's
 * clock), then the stats of flag keys the environment no longer has whose
 * impressions are all gone (`forgetDeletedFlags`); returns how many
 * impressions it deleted.
 */
export async function pruneExpiredImpressions(
  runtime: ServiceRuntime,
  retention: Pick<ImpressionRetention, 'maxAgeMs' | 'chunk'>,
): Promise<number> {
  if (retention.maxAgeMs <= 0) return 0
  const deleted = await pruneImpressions(runtime.knex, runtime.clock() - retention.maxAgeMs, { chunk: retention.chunk })
  await forgetDeletedFlags(runtime.knex, { chunk: retention.chunk })
  return deleted
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
