import type { RequestHandler } from 'express'
import type { FlagRuntime } from './flag-runtime.js'

/**
 * GET /stream: connected, one UPSERT per flag, then live updates. The
 * bootstrap and the subscription happen in the same tick, so no change can
 * fall between them.
 */
export function streamRoute(runtime: FlagRuntime): RequestHandler {
  return (req, res) => {
    const conn = runtime.hub.open(req, res)
    conn.write(runtime.bootstrap())
  }
}
