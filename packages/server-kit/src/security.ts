import cors from 'cors'
import type { RequestHandler } from 'express'
import helmet from 'helmet'

/** Security headers for JSON APIs and the bundled console page (scripts from our own origin only). */
export function securityHeaders(): RequestHandler {
  return helmet({
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
