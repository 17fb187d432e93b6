import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http'
import {
  API_SECURITY_HEADERS,
  API_SECURITY_HEADERS_FLAT,
  bearerToken,
  ifNoneMatchHits,
  openBootstrapStream,
  secretsMatcher,
} from '@flagsync/server-kit'
import type { LiveEntry, SerializedList } from '@flagsync/store'
import type { Express } from 'express'
import type { FlagRuntime } from './flag-runtime.js'
import { ofrepBulkFastPath, ofrepEventsFastPath } from './ofrep-route.js'
import { flatStreamScope } from './stream-route.js'

export interface FastPathOptions {
  runtime: FlagRuntime
  sdkKey?: string
  /** The client key: every fast-path route is one it may read. */
  clientKey?: string | undefined
}

type Header = readonly [name: string, value: string]
/** A prepared answer: its bytes and its headers as node:http's flat [name, value, name, value…] list. */
interface Answer {
  body: Buffer
  headers: string[]
}

/**
 * Answers the hot, successful reads (`GET /api/flags`, `GET /api/flags/:key`,
 * `GET /stream`, `GET /ofrep/v1/events`) on plain node:http, before Express: no router walk, no
 * per-request middleware closures, and less memory held per open stream.
 * Anything else — other methods, CORS requests, a missing or wrong key, an
 * unknown flag, a malformed path — returns false and goes to Express, so every
 * error keeps its one shape and status.
 */
function createFastPath({
  runtime,
  sdkKey,
  clientKey,
}: FastPathOptions): (req: IncomingMessage, res: ServerResponse) => boolean {
  const admits = keyAdmits(sdkKey, clientKey)
  const authorized = (req: IncomingMessage) => admits(bearerToken(req.headers.authorization))
  // Each answer's body and header list are built once per flag version (or list revision) and
  // reused until it changes: a request costs a map lookup and one writeHead with a flat array,
  // which node:http writes without building a per-request header object. Entries and lists are
  // replaced, never mutated, on a change, so weak keys expire with them.
  const flat = (pairs: readonly Header[]) => pairs.flat()
  const jsonHeaders = (body: Buffer, extra: Header[] = []) =>
    flat([
      ...API_SECURITY_HEADERS,
      ...extra,
      ['Content-Type', 'application/json; charset=utf-8'],
      ['Content-Length', String(body.length)],
    ])
  const entries = new WeakMap<LiveEntry, Answer>()
  const lists = new WeakMap<SerializedList, Answer & { etag: string; notModified: string[] }>()
  const entryAnswer = (entry: LiveEntry): Answer => {
    let answer = entries.get(entry)
    if (!answer) {
      const body = Buffer.from(entry.json)
      // no-cache, as on the list: a cache must ask again before reusing a flag it holds (the ETag makes that cheap).
      answer = {
        body,
        headers: jsonHeaders(body, [
          ['ETag', `"${entry.revision}"`],
          ['Cache-Control', 'no-cache'],
        ]),
      }
      entries.set(entry, answer)
    }
    return answer
  }
  const listAnswer = (list: SerializedList) => {
    let answer = lists.get(list)
    if (!answer) {
      const extra: Header[] = [
        ['ETag', list.etag],
        ['Cache-Control', 'no-cache'],
      ]
      answer = {
        body: list.body,
        etag: list.etag,
        headers: jsonHeaders(list.body, extra),
        notModified: flat([...API_SECURITY_HEADERS, ...extra]),
      }
      lists.set(list, answer)
    }
    return answer
  }
  const streamScope = flatStreamScope(runtime, API_SECURITY_HEADERS_FLAT)
  const ofrepEvents = ofrepEventsFastPath(runtime, admits)

  return (req, res) => {
    if (req.method !== 'GET' || req.headers.origin !== undefined) return false
    const url = req.url ?? ''
    const query = url.indexOf('?')
    const path = query === -1 ? url : url.slice(0, query)
    if (path.startsWith('/api/flags/')) {
      const raw = path.slice('/api/flags/'.length)
      if (raw === '') return listRoute(req, res)
      if (raw.includes('/') || raw.includes('%')) return false // escapes and nested paths: Express decides
      const entry = runtime.live.get(raw)
      if (!entry || !authorized(req)) return false
      const { body, headers } = entryAnswer(entry)
      res.writeHead(200, headers)
      res.end(body)
      return true
    }
    if (path === '/api/flags') return listRoute(req, res)
    if (path === '/stream') {
      // Resumes (an async look at the change log) and refusals past the cap are Express's.
      if (!authorized(req) || req.headers['last-event-id'] !== undefined || runtime.hub.full) return false
      openBootstrapStream(runtime.hub, req, res, streamScope)
      return true
    }
    if (path === '/ofrep/v1/events') return ofrepEvents(req, res, query === -1 ? '' : url.slice(query + 1))
    return false
  }

  function listRoute(req: IncomingMessage, res: ServerResponse): boolean {
    if (!authorized(req)) return false
    const list = listAnswer(runtime.live.serializedList(''))
    if (ifNoneMatchHits(req.headers['if-none-match'], list.etag)) {
      res.writeHead(304, list.notModified)
      res.end()
    } else {
      res.writeHead(200, list.headers)
      res.end(list.body)
    }
    return true
  }
}

/** The server's request listener: the fast paths first (GETs, OFREP's bulk POST), Express for everything else. */
export function withFastPath(app: Express, options: FastPathOptions): RequestListener {
  const fast = createFastPath(options)
  const { sdkKey, clientKey } = options
  const ofrepBulk = ofrepBulkFastPath({
    runtime: options.runtime,
    admits: keyAdmits(sdkKey, clientKey),
    fallback: app,
  })
  return (req, res) => {
    if (!(req.method === 'POST' ? ofrepBulk(req, res) : fast(req, res))) app(req, res)
  }
}

/** Whether a presented key may read flags: the SDK key or the client key; anything when no SDK key is set. */
function keyAdmits(sdkKey: string | undefined, clientKey: string | undefined): (token: string | undefined) => boolean {
  if (!sdkKey) return () => true
  const isKey = secretsMatcher([sdkKey, clientKey || undefined])
  return (token) => token !== undefined && isKey(token)
}
