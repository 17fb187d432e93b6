import type { ServerResponse } from 'node:http'
import cors from 'cors'
import type { Request, RequestHandler, Response } from 'express'
import helmet from 'helmet'

/**
 * The security headers of an API answer (JSON, errors, SSE streams, `/health`): what OWASP's REST Security
 * cheat sheet asks of an API, and nothing that only means something for a page a browser renders. Nothing in
 * such an answer may load, run or frame anything (`default-src 'none'`, `frame-ancestors 'none'`), it
 * is never sniffed into another type, sites of another origin cannot embed it (`same-site`, as on pages), a
 * link followed from it leaks no URL, and HTTPS sticks once used. Cache-Control and Content-Type are each
 * route's. No `X-Frame-Options`: `frame-ancestors` supersedes it in every browser that still gets updates.
 * Names are a subset of {@link pageSecurityHeaders}' (helmet's), so a page handler that sets those after these
 * replaces every one of them.
 * @example
 * res.writeHead(200, [...API_SECURITY_HEADERS_FLAT, 'Content-Type', 'application/json; charset=utf-8'])
 */
export const API_SECURITY_HEADERS: readonly (readonly [name: string, value: string])[] = Object.freeze([
  ['Content-Security-Policy', "default-src 'none'; frame-ancestors 'none'"],
  ['Cross-Origin-Resource-Policy', 'same-site'],
  ['Referrer-Policy', 'no-referrer'],
  ['Strict-Transport-Security', 'max-age=31536000; includeSubDomains'],
  ['X-Content-Type-Options', 'nosniff'],
] as const)

/** {@link API_SECURITY_HEADERS} as node:http's flat [name, value, name, value…] list, for `res.writeHead`. */
export const API_SECURITY_HEADERS_FLAT: readonly string[] = Object.freeze(API_SECURITY_HEADERS.flat())

/** Sets {@link API_SECURITY_HEADERS} on every response of an Express app or router serving an API. */
export function apiSecurityHeaders(): RequestHandler {
  return (_req, res, next) => {
    for (const [name, value] of API_SECURITY_HEADERS) res.setHeader(name, value)
    next()
  }
}

/**
 * Helmet's full set for a page or a page's file (the flag console, the dashboard), with a strict CSP: scripts,
 * styles and connections from the page's own origin only. Put on the response as it is sent: the `setHeaders` of
 * `express.static`, or a handler about to send a page. An app that puts {@link apiSecurityHeaders} on every answer
 * calls it there, so a request no file answers keeps the API's set.
 * @example
 * const page = pageSecurityHeaders()
 * app.use(express.static(dir, { setHeaders: page }))
 */
export function pageSecurityHeaders(): (res: ServerResponse) => void {
  const pageHelmet = helmet({
    contentSecurityPolicy: {
      directives: {
        defaultSrc: ["'self'"],
        scriptSrc: ["'self'"],
        styleSrc: ["'self'"],
        connectSrc: ["'self'"],
        imgSrc: ["'self'", 'data:'],
        objectSrc: ["'none'"],
        frameAncestors: ["'none'"],
        // Off: helmet's default would make a browser fetch every script and stylesheet of a page served over plain
        // http from any host but localhost over https instead, which breaks the console and the dashboard there
        // (a server on 0.0.0.0 in a container, TLS ended in front or not at all).
        upgradeInsecureRequests: null,
      },
    },
    crossOriginResourcePolicy: { policy: 'same-site' },
  })
  return (res) => pageHelmet(res.req as Request, res as Response, () => {})
}

/**
 * CORS for browser senders. `origins` is an allow-list ('*' allows any origin
 * but never with credentials); an empty list sends no CORS headers at all.
 */
export function corsAllowList(origins: readonly string[]): RequestHandler {
  const any = origins.includes('*')
  return cors({
    origin: any ? '*' : (origin, done) => done(null, origin !== undefined && origins.includes(origin)),
    methods: ['GET', 'POST', 'PATCH', 'DELETE', 'OPTIONS'],
    // No allowedHeaders: the cors package reflects what the preflight asks for, so a sync
    // client configured with its own headers (X-Api-Key, ...) passes. Origins stay allow-listed.
    exposedHeaders: ['Retry-After', 'ETag'],
    maxAge: 600,
  })
}

/** Parses a comma-separated CORS_ORIGINS value. */
export function parseOrigins(value: string | undefined): string[] {
  return (value ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
}
