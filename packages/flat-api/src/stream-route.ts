import { parseLastEventId } from '@flagsync/server-kit'
import type { RequestHandler } from 'express'
import type { FlagRuntime } from './flag-runtime.js'
import { resumeFrames } from './stream-frames.js'

/**
 * GET /stream: connected, one UPSERT per flag, then live updates; or, for a
 * client that sends a Last-Event-ID the change log still covers, `resumed` and
 * only the changes it missed. The frames are taken and the subscription made
 * in the same tick, so no change can fall between them. Past
 * `maxStreamConnections` the hub refuses with 503 and Retry-After.
 */
export function streamRoute(runtime: FlagRuntime): RequestHandler {
  return async (req, res) => {
    // A HEAD gets the headers alone (the hub ends it at once): no change-log lookup for it.
    const from = req.method === 'HEAD' ? undefined : parseLastEventId(req.headers['last-event-id'])
    for (let attempt = 0; from !== undefined && attempt < 3 && !runtime.hub.full; attempt++) {
      const missed = await runtime.missedChanges(from)
      if (missed === undefined) break
      // Still the revision the changes reach: nothing was broadcast since, so none can be lost or doubled.
      if (missed.upTo === runtime.live.revision) {
        runtime.hub.open(req, res, '', { initial: resumeFrames(from, missed.changes) })
        return
      }
    }
    runtime.hub.open(req, res, '', { initial: runtime.bootstrap() })
  }
}
