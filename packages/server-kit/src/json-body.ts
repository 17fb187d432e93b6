import express, { type RequestHandler } from 'express'
import { HttpError } from './http-error.js'

export interface JsonBodyOptions {
  /** Largest accepted body, bytes or a string like '1mb' (default '1mb'). */
  limit?: number | string
}

/**
 * Parses JSON bodies of any JSON type (schemas decide what is valid) and
 * answers 415 for a body sent as anything but JSON, instead of ignoring it.
 */
export function jsonBody(options: JsonBodyOptions = {}): RequestHandler[] {
  const parse = express.json({ limit: options.limit ?? '1mb', strict: false, type: isJsonType })
  const requireJson: RequestHandler = (req, _res, next) => {
    const hasBody = Number(req.headers['content-length'] ?? 0) > 0 || req.headers['transfer-encoding'] !== undefined
    if (hasBody && !isJsonType(req)) {
      next(new HttpError('unsupported_media_type', 'send the body as JSON with Content-Type: application/json'))
      return
    }
    next()
  }
  return [requireJson, parse]
}

function isJsonType(req: { headers: Record<string, string | string[] | undefined> }): boolean {
  const type = String(req.headers['content-type'] ?? '').toLowerCase()
  return /^application\/([\w.+-]*\+)?json\b/.test(type)
}
