import { createHash, timingSafeEqual } from 'node:crypto'
import type { Request, RequestHandler } from 'express'
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
  /**
   * A second, lesser token that may be shown in a web page (a client key): it authenticates, but is admitted only
   * where `clientKeyAllowed` says; elsewhere it is a 403 naming what it may do (`clientKeyRefusal`).
   */
  clientKey?: string
  /** Whether the client key may make this request (default: nowhere). */
  clientKeyAllowed?: (req: Request) => boolean
  /** The 403's message when the client key may not (say what it may do). */
  clientKeyRefusal?: string
}

/** The token a request presents: its Bearer header, else (with `queryParam`) that query parameter. */
export function presentedToken(req: Request, options: BearerAuthOptions = {}): string | undefined {
  const header = req.headers.authorization
  if (header !== undefined) return bearerToken(header)
  const inQuery = options.queryParam ? req.query[options.queryParam] : undefined
  return typeof inQuery === 'string' ? inQuery : undefined
}

/**
 * Requires `Authorization: Bearer <token>` (or, with `queryParam`, the token in that query parameter when no
 * Authorization header is sent); with no token configured it lets everything through. With `clientKey`, that
 * key is admitted where `clientKeyAllowed` says and answered 403 elsewhere.
 */
export function bearerAuth(token: string | undefined, options: BearerAuthOptions = {}): RequestHandler {
  return (req, res, next) => {
    if (!token) return next()
    const given = presentedToken(req, options)
    if (given !== undefined && secretsEqual(given, token)) return next()
    if (given !== undefined && options.clientKey && secretsEqual(given, options.clientKey)) {
      if (options.clientKeyAllowed?.(req)) return next()
      return next(
        new HttpError('forbidden', options.clientKeyRefusal ?? 'a client key may not do this', { key_kind: 'client' }),
      )
    }
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
