import type { ServerResponse } from 'node:http'
import type { Request } from 'express'
import { ACCESS_SCOPE } from '../auth/revocations.js'
import type { ServiceRuntime } from '../service-runtime.js'
import { SERVICE_TABLES } from '../tables.js'
import type { FlagStreams } from './flag-streams.js'

/**
 * Ends the OFREP refresh streams of SDK keys (server or client) that were
 * deleted, as `/stream` does for its own: deleting a key records a revocation
 * in the change log (`recordRevocation`), every instance hears it, and the
 * streams whose key no longer exists close at once.
 */
export class OfrepKeyStreams {
  private readonly keyOf = new Map<ServerResponse, number>()
  private readonly stopListening: () => void

  constructor(
    private readonly runtime: ServiceRuntime,
    streams: FlagStreams,
  ) {
    this.stopListening = streams.feed.onChanges((changes) => {
      if (changes.some((c) => c.scope === ACCESS_SCOPE)) void this.closeRevoked()
    })
  }

  /** Follows the refresh stream `req` opens, under the key it authenticated with. */
  track(req: Request, keyId: number): void {
    const res = req.res
    if (!res || req.method !== 'GET') return
    this.keyOf.set(res, keyId)
    res.once('close', () => this.keyOf.delete(res))
  }

  /** Closes the streams whose key is gone; a check that cannot run (database down) keeps them. */
  async closeRevoked(): Promise<void> {
    const ids = [...new Set(this.keyOf.values())]
    if (ids.length === 0) return
    try {
      const alive = new Set<number>()
      for (let i = 0; i < ids.length; i += 500) {
        const rows = (await this.runtime
          .knex(SERVICE_TABLES.sdkKeys)
          .whereIn('id', ids.slice(i, i + 500))
          .select('id')) as Array<{ id: number | string }>
        for (const row of rows) alive.add(Number(row.id))
      }
      for (const [res, id] of this.keyOf) {
        if (alive.has(id)) continue
        this.keyOf.delete(res)
        res.end()
      }
    } catch (err) {
      this.runtime.logger.warn({ err }, 'could not re-check the SDK keys of open OFREP refresh streams')
    }
  }

  stop(): void {
    this.stopListening()
  }
}
