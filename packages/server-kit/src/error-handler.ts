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
    if (error.details.retryAfterSeconds !== undefined) {
      res.setHeader('Retry-After', String(Math.ceil(error.details.retryAfterSeconds)))
    }
    res.status(error.status).json(error.toBody())
  }
}
