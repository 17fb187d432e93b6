import type { SseConnection } from '@flagsync/server-kit'
import type { ServiceRuntime } from '../service-runtime.js'

/**
 * Closes the open streams whose access ended: SDK-key streams whose key no longer exists (one query for all of
 * them, 500 ids at a time), dashboard streams whose check fails. A check that cannot run (database down) keeps the
 * stream. Closed streams leave `keyOf` and `accessOf`. Resolves how many closed.
 */
export async function closeRevokedStreams(
  runtime: ServiceRuntime,
  keyOf: Map<SseConnection, number>,
  accessOf: Map<SseConnection, () => Promise<boolean>>,
): Promise<number> {
  let closed = 0
  const ids = [...new Set(keyOf.values())]
  const alive = new Set<number>()
  try {
    for (let i = 0; i < ids.length; i += 500) {
      const rows = (await runtime
        .knex('flagsync_sdk_keys')
        .whereIn('id', ids.slice(i, i + 500))
        .select('id')) as Array<{ id: number | string }>
      for (const row of rows) alive.add(Number(row.id))
    }
    for (const [conn, id] of keyOf) {
      if (!alive.has(id)) {
        conn.close()
        keyOf.delete(conn)
        closed++
      }
    }
  } catch (err) {
    runtime.logger.warn({ err }, 'could not re-check the SDK keys of open streams')
  }
  for (const [conn, stillAllowed] of accessOf) {
    const allowed = await stillAllowed().catch(() => true)
    if (!allowed) {
      conn.close()
      accessOf.delete(conn)
      closed++
    }
  }
  return closed
}
