import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http'
import { bearerToken, secretsEqual, securityHeaders } from '@flagsync/server-kit'
import type { Express } from 'express'
import type { FlagRuntime } from './flag-runtime.js'

export interface FastPathOptions {
  runtime: FlagRuntime
  sdkKey?: string
}

type Header = [name: string, value: string]

/**
 * The security headers helmet would set, captured once by running it against a
 * recording response, so fast-path answers carry exactly the same set.
 */
function captureSecurityHeaders(): Header[] {
  const headers = new Map<string, string>()
  const recorder = {
    setHeader: (name: string, value: unknown) => headers.set(name.toLowerCase(), String(value)),
    removeHeader: (name: string) => headers.delete(name.toLowerCase()),
    getHeader: (name: string) => headers.get(name.toLowerCase()),
  }
  securityHeaders()({ headers: {} } as never, recorder as never, () => {})
  return [...headers]
}

/**
 * Answers the hot, successful reads (`GET /api/flags`, `GET /api/flags/:key`,
 * `GET /stream`) on plain node:http, before Express: no router walk, no
 * per-request middleware closures, and less memory held per open stream.
 * Anything else — other methods, CORS requests, a missing or wrong key, an
 * unknown flag, a malformed path — returns false and goes to Express, so every
 * error keeps its one shape and status.
 */
export function createFastPath({
  runtime,
  sdkKey,
}: FastPathOptions): (req: IncomingMessage, res: ServerResponse) => boolean {
  const security = captureSecurityHeaders()
  const authorized = (req: IncomingMessage) => {
    if (!sdkKey) return true
    const token = bearerToken(req.headers.authorization)
    return token !== undefined && secretsEqual(token, sdkKey)
  }
  const json = (res: ServerResponse, body: string | Buffer, extra: Header[] = []) => {
    for (const [name, value] of security) res.setHeader(name, value)
    for (const [name, value] of extra) res.setHeader(name, value)
    res.setHeader('Content-Type', 'application/json; charset=utf-8')
    res.setHeader('Content-Length', Buffer.byteLength(body))
    res.end(body)
  }

  return (req, res) => {
    if (req.method !== 'GET' || req.headers.origin !== undefined) return false
    const url = req.url ?? ''
    const query = url.indexOf('?')
    const path = query === -1 ? url : url.slice(0, query)
    if (path === '/stream') {
      // Resumes (an async look at the change log) and refusals past the cap are Express's.
      if (!authorized(req) || req.headers['last-event-id'] !== undefined || runtime.hub.full) return false
      for (const [name, value] of security) res.setHeader(name, value)
      runtime.hub.open(req, res).write(runtime.bootstrap())
      return true
    }
    if (path === '/api/flags' || path === '/api/flags/') {
      if (!authorized(req)) return false
      const list = runtime.live.serializedList('')
      const headers: Header[] = [
        ['ETag', list.etag],
        ['Cache-Control', 'no-cache'],
      ]
      if (req.headers['if-none-match'] === list.etag) {
        for (const [name, value] of [...security, ...headers]) res.setHeader(name, value)
        res.statusCode = 304
        res.end()
      } else {
        json(res, list.body, headers)
      }
      return true
    }
    if (!path.startsWith('/api/flags/')) return false
    const raw = path.slice('/api/flags/'.length)
    if (raw.includes('/') || raw.includes('%')) return false // escapes and nested paths: Express decides
    const entry = runtime.live.get(raw)
    if (!entry || !authorized(req)) return false
    json(res, entry.json)
    return true
  }
}

/** The server's request listener: the fast path first, Express for everything else. */
export function withFastPath(app: Express, options: FastPathOptions): RequestListener {
  const fast = createFastPath(options)
  return (req, res) => {
    if (!fast(req, res)) app(req, res)
  }
}
