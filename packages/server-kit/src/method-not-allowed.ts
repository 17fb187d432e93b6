import type { RequestHandler } from 'express'
import { HttpError } from './http-error.js'

/**
 * A known path called with a method it does not answer: 405 with `Allow`
 * (e.g. `GET, POST`), not the 404 of an unknown path. Mount it after the
 * path's real routes: `router.all('/api/flags', methodNotAllowed('GET, POST'))`.
 */
export function methodNotAllowed(allowed: string, message = `use ${allowed}`): RequestHandler {
  return (_req, res) => {
    res.setHeader('Allow', allowed)
    throw new HttpError('method_not_allowed', message)
  }
}
