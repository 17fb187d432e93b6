import { hash } from 'node:crypto'
import type { Request, RequestHandler } from 'express'
import { HttpError } from './http-error.js'

/**
 * SHA-256 of `value` (its UTF-8 bytes) in base64: one call into OpenSSL and no Buffer, a third of what
 * `createHash(…).update(…).digest()` costs on a path that checks a key per request.
 */
const digest = (value: string): string => hash('sha256', value, 'base64')

/**
 * Whether two digests are equal, looking at every character whatever differs: no early exit, so the time
 * taken says nothing about where two digests differ (as `crypto.timingSafeEqual` on their bytes).
 */
function sameDigest(a: string, b: string): boolean {
  let difference = a.length ^ b.length
  for (let i = 0; i < a.length; i++) difference |= a.charCodeAt(i) ^ b.charCodeAt(i)
  return difference === 0
}

/**
 * Compares in constant time: both sides are hashed first, so neither the
 * content nor the length of the expected secret leaks through timing.
 */
export function secretsEqual(given: string, expected: string): boolean {
  return sameDigest(digest(given), digest(expected))
}

/**
 * {@link secretsEqual} against fixed secrets, their hashes taken once: a
 * request hashes only the token it presents. Undefined secrets are skipped.
 * @example
 * const isKey = secretsMatcher([sdkKey, clientKey])
 * isKey('presented-token') // true when it equals either
 */
export function secretsMatcher(secrets: ReadonlyArray<string | undefined>): (given: string) => boolean {
  const expected = secrets.filter((s): s is string => s !== undefined).map(digest)
  return (given) => {
    const presented = digest(given)
    let equal = false
    for (const e of expected) equal = sameDigest(presented, e) || equal
    return equal
  }
}

/** The token of an `Authorization: Bearer <token>` header, or undefined. */
export function bearerToken(header: string | undefined): string | undefined {
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header ?? '')
  return match?.[1]
}

/** Options of `bearerAuth`. */
export interface BearerAuthOptions {
  /**
   * A query parameter that may carry the token when no Authorization header is sent (e.g. `sdk_key`), read by the
   * rule of `keyFromQuery`: for routes a browser's own EventSource opens, which cannot send headers.
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

/** The token a request presents in its `Authorization: Bearer` header, or undefined. */
export function presentedToken(req: Request): string | undefined {
  const header = req.headers.authorization
  return header === undefined ? undefined : bearerToken(header)
}

/** Which keys `keyFromQuery` hands on, and how its 401 names them. */
export interface QueryKeyOptions {
  /** Whether a key may come this way (default: any); another is a 401. */
  accepts?: (key: string) => boolean
  /** What the parameter must hold, for the 401 (default `one key`), e.g. `one SDK key (sk_live_…)`. */
  what?: string
}

/**
 * The `?sdk_key=` rule, for routes a browser's own EventSource opens (it cannot send headers): with no
 * Authorization header, the key in the query parameter `param` is handed on as the `Authorization: Bearer`
 * header it stands for, so it is verified exactly like one. A real header wins. A repeated or empty parameter,
 * or a key `accepts` refuses, is a 401 naming the parameter. A URL lands in access logs, so only for those routes.
 */
export function keyFromQuery(param: string, options: QueryKeyOptions = {}): RequestHandler {
  return (req, res, next) => {
    const refused = moveQueryKey(req, param, options)
    if (refused) res.setHeader('WWW-Authenticate', 'Bearer')
    next(refused)
  }
}

function moveQueryKey(req: Request, param: string, options: QueryKeyOptions): HttpError | undefined {
  const value = req.query[param]
  if (value === undefined || req.headers.authorization !== undefined) return undefined
  if (typeof value !== 'string' || value === '' || options.accepts?.(value) === false) {
    return new HttpError('unauthorized', `${param} must be ${options.what ?? 'one key'}`)
  }
  req.headers.authorization = `Bearer ${value}`
  return undefined
}

/**
 * Requires `Authorization: Bearer <token>` (or, with `queryParam`, the token in that query parameter when no
 * Authorization header is sent); with no token configured it lets everything through. With `clientKey`, that
 * key is admitted where `clientKeyAllowed` says and answered 403 elsewhere.
 */
export function bearerAuth(token: string | undefined, options: BearerAuthOptions = {}): RequestHandler {
  if (!token) return (_req, _res, next) => next()
  const fromQuery = options.queryParam ? keyFromQuery(options.queryParam) : undefined
  const check: RequestHandler = (req, res, next) => {
    const given = presentedToken(req)
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
  if (!fromQuery) return check
  return (req, res, next) => fromQuery(req, res, (error?: unknown) => (error ? next(error) : check(req, res, next)))
}
