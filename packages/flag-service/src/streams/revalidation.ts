import type { CredentialStreams, SseConnection } from '@flagsync/server-kit'
import type { ServiceRuntime } from '../service-runtime.js'
import { SERVICE_TABLES } from '../tables.js'

/** The SDK keys among `ids` that still exist (500 ids a query). */
async function existingSdkKeys(runtime: ServiceRuntime, ids: number[]): Promise<Set<number>> {
  const alive = new Set<number>()
  for (let i = 0; i < ids.length; i += 500) {
    const rows = (await runtime
      .knex(SERVICE_TABLES.sdkKeys)
      .whereIn('id', ids.slice(i, i + 500))
      .select('id')) as Array<{ id: number | string }>
    for (const row of rows) alive.add(Number(row.id))
  }
  return alive
}

/**
 * Closes the open streams whose access ended: SDK-key streams (`/stream` and
 * OFREP refresh) whose key no longer exists, one query for all of them;
 * dashboard streams whose check fails. A check that cannot run (database
 * down) keeps the stream. Closed dashboard streams leave `accessOf`. Resolves
 * how many closed.
 */
export async function closeRevokedStreams(
  runtime: ServiceRuntime,
  sdkKeyStreams: CredentialStreams<number>,
  accessOf: Map<SseConnection, () => Promise<boolean>>,
): Promise<number> {
  let closed = 0
  try {
    closed += await sdkKeyStreams.closeRevoked((ids) => existingSdkKeys(runtime, ids))
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
