import { TABLES } from '@flagsync/store'
import { projectOfSegmentScope, SEGMENT_SCOPE_PREFIX } from '../flags/expand.js'
import type { ServiceRuntime } from '../service-runtime.js'
import { SERVICE_TABLES } from '../tables.js'

/**
 * Deletes the segments of projects that no longer exist, through the flag
 * writer (so each removal reaches the change log and every instance's live
 * set). Deleting a project removes its environments' flags but does not know
 * about segments; this catches up at start and hourly. Resolves the number
 * of segments removed.
 */
export async function sweepOrphanSegments(runtime: ServiceRuntime): Promise<number> {
  const scopes = (
    (await runtime.knex(TABLES.flags).distinct('scope').where('scope', 'like', `${SEGMENT_SCOPE_PREFIX}%`)) as Array<{
      scope: string
    }>
  ).map((r) => r.scope)
  if (scopes.length === 0) return 0
  const alive = new Set(
    (
      (await runtime
        .knex(SERVICE_TABLES.projects)
        .whereIn('id', scopes.map(projectOfSegmentScope))
        .select('id')) as Array<{ id: string }>
    ).map((r) => r.id),
  )
  const orphans = scopes.filter((scope) => !alive.has(projectOfSegmentScope(scope)))
  if (orphans.length === 0) return 0
  return runtime.write(async (trx, flags) => {
    let removed = 0
    for (const scope of orphans) {
      // Re-checked inside the write: a project id is never reused, but the rows may be gone already.
      const keys = ((await trx(TABLES.flags).where('scope', scope).select('key')) as Array<{ key: string }>).map(
        (r) => r.key,
      )
      await flags.load(keys, scope)
      for (const key of keys) if (await flags.delete(key, scope)) removed++
    }
    return removed
  })
}

const HOUR = 60 * 60 * 1000

/**
 * Starts the hourly maintenance of a flag service instance: prunes change-log entries older than
 * `changeRetentionMs` (default 7 days; the newest 1 000 are always kept) and sweeps orphan segments, the first
 * sweep now. Resolves nothing: failures are logged and retried on the next hour. Returns the timer to clear.
 */
export function startMaintenance(
  runtime: ServiceRuntime,
  changeRetentionMs = 7 * 24 * HOUR,
): ReturnType<typeof setInterval> {
  const sweep = () =>
    sweepOrphanSegments(runtime).catch((err) =>
      runtime.logger.warn({ err }, 'could not remove the segments of deleted projects'),
    )
  const timer = setInterval(() => {
    runtime.store
      .pruneChanges(changeRetentionMs, 1000)
      .catch((err) => runtime.logger.warn({ err }, 'could not prune the change log'))
    void sweep()
  }, HOUR)
  timer.unref()
  void sweep()
  return timer
}
