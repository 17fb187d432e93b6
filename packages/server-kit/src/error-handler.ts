import type { ErrorRequestHandler, RequestHandler } from 'express'
import { HttpError, toHttpError } from './http-error.js'
import type { Logger } from './logger.js'

/** 404 as JSON for any route nobody answered. */
export const notFound: RequestHandler = (req, _res, next) => {
  next(new HttpError('not_found', `no route for ${req.method} ${req.path}`))
}

/** The last middleware: every error leaves as `{error, code, ...}` with its status. */
export function errorHandler(logger?: Logger): ErrorRequestHandler {
  return (err, req, res, _next) => {
    const error = toHttpError(err)
    if (error.status >= 500) {
      logger?.error({ err: error.cause ?? err, method: req.method, path: req.path }, error.message)
    }
    if (res.headersSent) {
      res.destroy()
      return
    }
    // A static file's answer may have set its caching and validators before failing (a 412 or 416 from `send`):
    // an error must not be stored as that file, least of all as `immutable`.
    for (const header of ANSWER_HEADERS) res.removeHeader(header)
    res.setHeader('Cache-Control', 'no-store')
    if (error.details.retryAfterSeconds !== undefined) {
      res.setHeader('Retry-After', String(Math.ceil(error.details.retryAfterSeconds)))
    }
    res.status(error.status).json(error.toBody())
  }
}

/** What describes a successful answer's body, and so never belongs on an error's. */
const ANSWER_HEADERS = [
  'Cache-Control',
  'Content-Type',
  'ETag',
  'Last-Modified',
  'Content-Range',
  'Accept-Ranges',
  'Content-Disposition',
]
