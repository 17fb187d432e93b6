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

/** Requires `Authorization: Bearer <token>`; with no token configured it lets everything through. */
export function bearerAuth(token: string | undefined): RequestHandler {
  return (req, res, next) => {
    if (!token) return next()
    const given = bearerToken(req.headers.authorization)
    if (given !== undefined && secretsEqual(given, token)) return next()
    res.setHeader('WWW-Authenticate', 'Bearer')
    next(
      new HttpError(
        'unauthorized',
        given === undefined ? 'missing Authorization: Bearer <key> header' : 'invalid credentials',
      ),
    )
  }
}
