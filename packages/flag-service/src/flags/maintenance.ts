import { TABLES } from '@flagsync/store'
import type { ServiceRuntime } from '../service-runtime.js'
import { SERVICE_TABLES } from '../tables.js'
import { projectOfSegmentScope, SEGMENT_SCOPE_PREFIX } from './expand.js'

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
