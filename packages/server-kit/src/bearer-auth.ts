import { createHash, timingSafeEqual } from 'node:crypto'
import type { RequestHandler } from 'express'
import { HttpError } from './http-error.js'

const digest = (value: string) => createHash('sha256').update(value).digest()

/**
 * Compares in constant time: both sides are hashed first, so neither the
 * content nor the length of the expected secret leaks through timing.
 */
export function secretsEqual(given: string, expected: string): boolean {
  return timingSafeEqual(digest(given), digest(expected))
}

/** The token of an `Authorization: Bearer <token>` header, or undefined. */
export function bearerToken(header: string | undefined): string | undefined {
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header ?? '')
  return match?.[1]
}

/** Options of `bearerAuth`. */
export interface BearerAuthOptions {
  /**
   * A query parameter that may carry the token when no Authorization header is sent (e.g. `sdk_key`): for routes a
   * browser's own EventSource opens, which cannot send headers. A URL lands in access logs, so only for those.
   */
  queryParam?: string
}

/**
 * Requires `Authorization: Bearer <token>` (or, with `queryParam`, the token in that query parameter when no
 * Authorization header is sent); with no token configured it lets everything through.
 */
export function bearerAuth(token: string | undefined, options: BearerAuthOptions = {}): RequestHandler {
  return (req, res, next) => {
    if (!token) return next()
    const header = req.headers.authorization
    const inQuery = options.queryParam && header === undefined ? req.query[options.queryParam] : undefined
    const given = typeof inQuery === 'string' ? inQuery : bearerToken(header)
    if (given !== undefined && secretsEqual(given, token)) return next()
    res.setHeader('WWW-Authenticate', 'Bearer')
    next(
      new HttpError(
        'unauthorized',
        given !== undefined
          ? 'invalid credentials'
          : `missing Authorization: Bearer <key> header${options.queryParam ? ` (or ?${options.queryParam}=<key>)` : ''}`,
      ),
    )
  }
}
