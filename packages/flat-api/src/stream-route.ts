import { openStream, type StreamScope } from '@flagsync/server-kit'
import type { FlagChange } from '@flagsync/store'
import type { RequestHandler } from 'express'
import type { FlagRuntime } from './flag-runtime.js'
import { resumeFrames } from './stream-frames.js'

/**
 * The flat API's stream scope: the whole set. A bootstrap is connected, one
 * UPSERT per flag and the end marker; a resume, `resumed` and the changes
 * missed (`FlagRuntime.missedChanges`).
 */
export function flatStreamScope(runtime: FlagRuntime, headers?: readonly string[]): StreamScope<FlagChange[]> {
  return {
    hubScope: '',
    ...(headers ? { headers } : {}),
    revision: () => runtime.live.revision,
    bootstrap: () => runtime.bootstrap(),
    catchUp: () => runtime.feed.catchUp(),
    missed: (from, upTo) => runtime.missedChanges(from, upTo),
    resumeFrames,
  }
}

/**
 * GET /stream: connected, one UPSERT per flag, then live updates; or, for a
 * client that sends a Last-Event-ID the change log still covers, `resumed` and
 * only the changes it missed (the shared engine, `openStream`). Past
 * `maxStreamConnections` the hub refuses with 503 and Retry-After.
 */
export function streamRoute(runtime: FlagRuntime): RequestHandler {
  const scope = flatStreamScope(runtime)
  return async (req, res) => {
    await openStream(runtime.hub, req, res, scope)
  }
}
