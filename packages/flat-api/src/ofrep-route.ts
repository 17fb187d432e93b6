import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http'
import type { TLSSocket } from 'node:tls'
import { type EvaluationContext, ofrepReadRequest } from '@flagsync/evaluation'
import type { EvaluableFlag } from '@flagsync/protocol'
import {
  API_SECURITY_HEADERS_FLAT,
  bearerToken,
  createOfrepRouter,
  eventsUrl,
  jsonDepthExceeds,
  type OfrepBulkAnswer,
} from '@flagsync/server-kit'
import type { RequestHandler, Router } from 'express'
import type { FlagRuntime } from './flag-runtime.js'

type BulkAnswer = (
  context: EvaluationContext,
  url: string,
  ifNoneMatch: string | string[] | undefined,
) => OfrepBulkAnswer

/** What the fast paths in front of Express take from a runtime's OFREP router: bulk answers and refresh streams. */
interface FastOfrep {
  answerBulk: BulkAnswer
  openRefresh(req: IncomingMessage, res: ServerResponse): Promise<void>
  refreshFull(): boolean
}
/** Each runtime's OFREP router, for {@link ofrepBulkFastPath} and {@link ofrepEventsFastPath}. */
const fastOfrep = new WeakMap<FlagRuntime, FastOfrep>()

/**
 * OFREP on the flat API (`/ofrep/v1`): one scope, the whole flag set, behind
 * `auth` (the app's key check; `X-API-Key` stands for `Authorization: Bearer`).
 * The shared router evaluates; this adapter hands it the live flags and the change feed.
 */
export function ofrepRoute(runtime: FlagRuntime, auth: RequestHandler): Router {
  let cached: { revision: number; flags: EvaluableFlag[] } | undefined
  const flags = (): EvaluableFlag[] => {
    const revision = runtime.live.revision
    if (cached?.revision !== revision) {
      // Each flag with its revision, for the answer's metadata; rebuilt once per change, not per request.
      const list = runtime.live.list('').map((e) => ({ ...e.flag, revision: e.revision }) as unknown as EvaluableFlag)
      cached = { revision, flags: list }
    }
    return cached.flags
  }
  const scope = () => ({ id: '', flags: flags(), revision: runtime.live.revision })
  const router = createOfrepRouter({
    name: 'flagsync flat API',
    auth,
    resolveScope: async () => scope(),
    watch: (onChange) => {
      const stopChanges = runtime.feed.onChanges((changes) => {
        const mine = changes.filter((c) => c.scope === '')
        const last = mine.at(-1)
        if (last) onChange([''], last.revision)
      })
      const stopReset = runtime.feed.onReset(() => onChange('*', runtime.live.revision))
      return () => {
        stopChanges()
        stopReset()
      }
    },
    catchUp: () => runtime.feed.catchUp(),
  })
  fastOfrep.set(runtime, {
    answerBulk: (context, url, ifNoneMatch) => router.answerBulk(scope(), context, url, ifNoneMatch),
    openRefresh: (req, res) => router.openRefresh(req, res, scope(), API_SECURITY_HEADERS_FLAT),
    refreshFull: () => router.refreshFull(),
  })
  return router
}

/**
 * GET /ofrep/v1/events on plain node:http, before Express, as GET /stream is: thousands of providers hold these
 * streams open, and outside Express each costs less memory and a change reaches all of them sooner. Taken for a
 * new stream (a `Last-Event-ID` resume reads the change log: Express's) under the cap, with exactly one admitted
 * key: the Authorization header, `X-API-Key` or `?key=` (once, not empty). Anything else returns false, so Express
 * answers and refuses it in its one shape.
 */
export function ofrepEventsFastPath(
  runtime: FlagRuntime,
  admits: (token: string | undefined) => boolean,
): (req: IncomingMessage, res: ServerResponse, query: string) => boolean {
  return (req, res, query) => {
    const ofrep = fastOfrep.get(runtime)
    if (!ofrep || req.headers['last-event-id'] !== undefined || ofrep.refreshFull()) return false
    const key = presentedKey(req, query)
    if (key === undefined || !admits(key)) return false
    // Without Last-Event-ID the stream opens synchronously; a failure there is the server's, and ends the socket.
    ofrep.openRefresh(req, res).catch((err: Error) => res.destroy(err))
    return true
  }
}

/** The one key a refresh request presents, or undefined when it presents none or several (Express decides then). */
function presentedKey(req: IncomingMessage, query: string): string | undefined {
  const { authorization, 'x-api-key': apiKey } = req.headers
  const fromQuery = query === '' ? [] : new URLSearchParams(query).getAll('key')
  const sources = (authorization === undefined ? 0 : 1) + (apiKey === undefined ? 0 : 1) + fromQuery.length
  if (sources !== 1) return undefined
  if (authorization !== undefined) return bearerToken(authorization)
  if (typeof apiKey === 'string') return apiKey === '' ? undefined : apiKey
  const key = fromQuery[0]
  return key === '' ? undefined : key
}

const BULK_PATH = '/ofrep/v1/evaluate/flags'
/** A context is a few hundred bytes; a larger body is Express's to read, under its own limit. */
const FAST_BODY_LIMIT = 64 * 1024
/** The JSON body-parser reads as UTF-8 without converting a charset. */
const UTF8_JSON = /^application\/json\s*(?:;\s*charset="?utf-8"?\s*)?$/i

export interface OfrepFastPathOptions {
  runtime: FlagRuntime
  /** Whether the presented key (Bearer or `X-API-Key`) may read flags. */
  admits(token: string | undefined): boolean
  /** Express: everything this path does not answer, with the body put back to be read again. */
  fallback: RequestListener
}

/**
 * POST /ofrep/v1/evaluate/flags on plain node:http, before Express, with the
 * OFREP router's own answer (`answerBulk`): the same ETag, 304 and body. Taken
 * only for a same-origin request with an admitted key, a small UTF-8 JSON body
 * of known length and no re-fetch query; a body that does not parse to a
 * readable context goes to Express with its bytes put back, so every refusal
 * keeps its one shape. Returns false when the request is not one it takes.
 */
export function ofrepBulkFastPath(
  options: OfrepFastPathOptions,
): (req: IncomingMessage, res: ServerResponse) => boolean {
  const { runtime, admits, fallback } = options
  return (req, res) => {
    const { headers } = req
    const length = Number(headers['content-length'])
    if (
      req.url !== BULK_PATH ||
      headers.origin !== undefined ||
      !(length > 0 && length <= FAST_BODY_LIMIT) ||
      headers['transfer-encoding'] !== undefined ||
      headers['content-encoding'] !== undefined ||
      !UTF8_JSON.test(headers['content-type'] ?? '')
    ) {
      return false
    }
    const answerBulk = fastOfrep.get(runtime)?.answerBulk
    const token = bearerToken(headers.authorization ?? apiKeyBearer(headers['x-api-key']))
    if (!answerBulk || !admits(token)) return false
    readReplayable(req, (body) => {
      if (!answerFrom(body, answerBulk, req, res)) {
        req.unshift(body)
        fallback(req, res)
      }
    })
    return true
  }
}

function apiKeyBearer(key: string | string[] | undefined): string | undefined {
  return typeof key === 'string' && key !== '' ? `Bearer ${key}` : undefined
}

/** Answers from a whole body, or returns false (nothing written) for Express to answer it. */
function answerFrom(body: Buffer, answerBulk: BulkAnswer, req: IncomingMessage, res: ServerResponse): boolean {
  let answer: OfrepBulkAnswer
  try {
    const parsed: unknown = JSON.parse(body.toString())
    if (jsonDepthExceeds(parsed)) return false
    const read = ofrepReadRequest(parsed)
    if (!read.ok) return false
    answer = answerBulk(read.context, refreshUrl(req), req.headers['if-none-match'])
  } catch {
    return false
  }
  if (answer.body === undefined) {
    res.writeHead(304, [...NOT_MODIFIED_HEADERS, 'ETag', answer.etag])
    res.end()
  } else {
    res.writeHead(200, [...ANSWER_HEADERS, 'ETag', answer.etag, 'Content-Length', String(answer.body.length)])
    res.end(answer.body, answer.release)
  }
  return true
}

/** The headers every bulk answer shares, as the OFREP router's Express route sets them: a 304 carries no type. */
const NOT_MODIFIED_HEADERS = [...API_SECURITY_HEADERS_FLAT, 'Cache-Control', 'private, no-cache']
const ANSWER_HEADERS = [...NOT_MODIFIED_HEADERS, 'Content-Type', 'application/json; charset=utf-8']

/** Refresh URLs by scheme, host and key: clients of one server send the same few, and `new URL` is not free. */
const refreshUrls = new Map<string, string>()
const REFRESH_URLS_KEPT = 256

/** The bulk answer's refresh connection for this request (`eventsUrl`), built once per scheme, host and key. */
function refreshUrl(req: IncomingMessage): string {
  const { headers } = req
  const origin = `${(req.socket as TLSSocket).encrypted ? 'https' : 'http'}://${headers.host ?? 'localhost'}`
  const apiKey = headers['x-api-key']
  const memo = `${origin}\n${headers.authorization ?? ''}\n${typeof apiKey === 'string' ? apiKey : ''}`
  let url = refreshUrls.get(memo)
  if (url === undefined) {
    url = eventsUrl(origin, '/ofrep/v1', headers)
    if (refreshUrls.size >= REFRESH_URLS_KEPT) refreshUrls.clear()
    refreshUrls.set(memo, url)
  }
  return url
}

/**
 * Reads a whole body without consuming it for good: the chunks are taken with
 * `read()` (paused mode) and `done` runs once the request is complete, before
 * its `end`, so `req.unshift(body)` still hands the bytes to another reader.
 */
function readReplayable(req: IncomingMessage, done: (body: Buffer) => void): void {
  const chunks: Buffer[] = []
  const onReadable = () => {
    for (let chunk: Buffer | null = req.read(); chunk !== null; chunk = req.read()) chunks.push(chunk)
    if (!req.complete) return
    req.off('readable', onReadable)
    done(Buffer.concat(chunks))
  }
  req.on('readable', onReadable)
}
