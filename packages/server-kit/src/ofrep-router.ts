import { createHash } from 'node:crypto'
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http'
import {
  type EvaluationContext,
  ofrepBulkWrite,
  ofrepEtag,
  ofrepEvaluate,
  ofrepReadRequest,
} from '@flagsync/evaluation'
import type { EvaluableFlag, OfrepConfiguration, OfrepEventStream } from '@flagsync/protocol'
import { type ErrorRequestHandler, type Request, type RequestHandler, type Response, Router } from 'express'
import { bearerToken, keyFromQuery } from './bearer-auth.js'
import { HttpError, toHttpError } from './http-error.js'
import { ifNoneMatchHits } from './if-none-match.js'
import { jsonBody } from './json-body.js'
import { methodNotAllowed } from './method-not-allowed.js'
import { BodyPool } from './ofrep-body.js'
import { type OfrepChanges, OfrepRefresh, type OfrepVersion, type OfrepWatch } from './ofrep-refresh.js'
import type { SseHubOptions } from './sse-hub.js'

/** The flags a request evaluates against: one environment's (flag service) or the whole set (flat API). */
export interface OfrepScope {
  /** The refresh scope: a change to it notifies exactly the providers of this id. */
  id: string
  /** The flags as SDKs evaluate them (segments expanded), each with its `revision` when known. Same array until a change. */
  flags: readonly EvaluableFlag[]
  /** A change-log revision this view includes (the version of a scope not seen changing since start). */
  revision: number
}

export interface OfrepRouterOptions {
  /** Authenticates the request (`Authorization: Bearer`; `X-API-Key` and the refresh URL's `?key=` are turned into it). */
  auth: RequestHandler
  /** The authenticated request's scope. */
  resolveScope(req: Request): Promise<OfrepScope>
  /** The change feed: which scopes each committed change touched. */
  watch: OfrepWatch
  /** Catches up with changes committed by other processes: a re-fetch that names a newer version waits for it. */
  catchUp?(): Promise<void>
  /**
   * The change log's entries for a scope after `from` through `upTo` (undefined: it cannot tell). A provider
   * resuming its refresh stream is told to re-fetch only when its scope has some; omitted, whenever its
   * `Last-Event-ID` is below the scope's version.
   */
  missedChanges?: OfrepChanges['missed']
  /** `name` of GET /configuration. */
  name: string
  bodyLimit?: number | string
  /** Seconds a hidden tab keeps its refresh connection (default 120). */
  inactivityDelaySec?: number
  /** The refresh stream's hub (keep-alive, caps). */
  sse?: SseHubOptions
  /** Called with a function that ends every refresh stream and the watch; call it on shutdown. */
  onStop?(stop: () => void): void
}

/** The OFREP router, with its bulk answer and refresh streams for a server's fast path in front of it. */
export interface OfrepRouter extends Router {
  answerBulk: OfrepBulkAnswerer
  /**
   * Opens a refresh stream on `scope` for a request the caller has authorized, as GET /events does; `headers`
   * (node:http's flat list) are sent with it.
   */
  openRefresh(
    req: IncomingMessage,
    res: ServerResponse,
    scope: { id: string; revision: number },
    headers?: readonly string[],
  ): Promise<void>
  /** Whether the refresh streams are at their cap: a new one is then the router's to refuse (503). */
  refreshFull(): boolean
}

const CONFIGURATION: OfrepConfiguration = {
  name: '',
  capabilities: {
    cacheInvalidation: { polling: { enabled: true, minPollingIntervalMs: 1000 } },
    flagEvaluation: { supportedTypes: ['boolean', 'string', 'integer', 'float', 'object'] },
    caching: { enabled: true, ttl: 0 },
  },
}

/**
 * OFREP for a flag server, mounted at `/ofrep/v1`: POST /evaluate/flags/{key},
 * POST /evaluate/flags (ETag, If-None-Match → 304, refresh connections), GET
 * /configuration and the refresh stream GET /events. Evaluation is the shared
 * `@flagsync/evaluation` core; the server supplies auth, scope and change feed.
 * Every refusal carries the OFREP `{errorCode, errorDetails}` and `{error, code}`.
 */
export function createOfrepRouter(options: OfrepRouterOptions): OfrepRouter {
  const refresh = new OfrepRefresh(options.watch, options.sse)
  options.onStop?.(() => refresh.stop())
  const answerBulk = bulkAnswerer(refresh, options.inactivityDelaySec ?? 120)
  const changes = { catchUp: options.catchUp, missed: options.missedChanges }
  const openRefresh: OfrepRouter['openRefresh'] = async (req, res, scope, headers) => {
    await refresh.open(req, res, scope.id, scope.revision, changes, headers)
  }
  const router = Object.assign(Router(), { answerBulk, openRefresh, refreshFull: () => refresh.hub.full })
  const body = jsonBody({ limit: options.bodyLimit })
  const auth = [apiKeyHeader, options.auth]

  router.post('/evaluate/flags/:key', ...auth, ...body, evaluateOne(options))
  router.post('/evaluate/flags', ...auth, ...body, evaluateAll(options, answerBulk, refresh))
  router.get('/configuration', ...auth, configurationRoute(options.name))
  router.get('/events', keyFromQuery('key'), ...auth, async (req, res) => {
    await openRefresh(req, res, await options.resolveScope(req))
  })

  router.all('/evaluate/flags/:key', methodNotAllowed('POST'))
  router.all('/evaluate/flags', methodNotAllowed('POST'))
  router.all('/configuration', methodNotAllowed('GET'))
  router.all('/events', methodNotAllowed('GET'))
  router.use(ofrepErrorShape)
  return router
}

/** POST /evaluate/flags/{key}: 200 success, 400 failure, 404 FLAG_NOT_FOUND. */
function evaluateOne(options: OfrepRouterOptions): RequestHandler {
  return async (req, res) => {
    const context = readContext(req.body)
    const scope = await options.resolveScope(req)
    const key = String(req.params.key)
    const index = flagIndex(scope.flags)
    const outcome = ofrepEvaluate(index.get(key), key, context, (k) => index.get(k))
    if (outcome.ok) {
      res.setHeader('Cache-Control', 'private, no-cache')
      res.json(outcome.body)
      return
    }
    const code = outcome.status === 404 ? 'not_found' : 'bad_request'
    res.status(outcome.status).json({ ...outcome.body, error: outcome.body.errorDetails, code })
  }
}

/**
 * POST /evaluate/flags: every flag for the context, tagged by the scope's
 * version and the context (304 on a match), with the refresh connection. A
 * re-fetch naming a version newer than this process has catches up first.
 */
function evaluateAll(
  options: OfrepRouterOptions,
  answerBulk: OfrepBulkAnswerer,
  refresh: OfrepRefresh,
): RequestHandler {
  return async (req, res) => {
    const context = readContext(req.body)
    const asked = refetchMetadata(req)
    let scope = await options.resolveScope(req)
    if (options.catchUp && isNewer(asked, refresh.versionOf(scope.id, scope.revision))) {
      await options.catchUp()
      scope = await options.resolveScope(req)
    }
    const events = eventsUrl(`${req.protocol}://${req.get('host') ?? 'localhost'}`, req.baseUrl, req.headers)
    const answer = answerBulk(scope, context, events, req.headers['if-none-match'])
    res.setHeader('ETag', answer.etag)
    res.setHeader('Cache-Control', 'private, no-cache')
    if (answer.body === undefined) {
      res.status(304).end()
      return
    }
    res.setHeader('Content-Type', 'application/json; charset=utf-8')
    res.setHeader('Content-Length', answer.body.length)
    res.end(answer.body, answer.release)
  }
}

/** A bulk answer: the ETag, and the OfrepBulkResponse's bytes unless `If-None-Match` matched it (a 304). */
export interface OfrepBulkAnswer {
  etag: string
  body?: Buffer
  /**
   * Lends the body's memory to a later answer: call it once the bytes are written (`res.end(body, release)`)
   * and read the body no more. Not calling it is safe; the memory is then the GC's.
   */
  release?: () => void
}

/**
 * The bulk route's answer for an authenticated request's scope and read
 * context, `eventsUrl` its refresh stream (see {@link eventsUrl}): what the
 * route sends once any re-fetch metadata is honoured, for a server that
 * answers the route before its router (the flat API's fast path).
 */
export type OfrepBulkAnswerer = (
  scope: OfrepScope,
  context: EvaluationContext,
  eventsUrl: string,
  ifNoneMatch: string | string[] | undefined,
) => OfrepBulkAnswer

function bulkAnswerer(refresh: OfrepRefresh, inactivityDelaySec: number): OfrepBulkAnswerer {
  // The bytes after the flags, kept for the last refresh URL: clients of one server mostly share it.
  let tail = { url: '', bytes: Buffer.alloc(0) }
  const bodies = new BodyPool()
  return (scope, context, url, ifNoneMatch) => {
    const version = refresh.versionOf(scope.id, scope.revision)
    const etag = ofrepEtag(`${scope.id}.${version.revision}`, context)
    if (ifNoneMatchHits(ifNoneMatch, etag)) return { etag }
    if (tail.url !== `${version.revision} ${url}`) {
      const streams = JSON.stringify([{ type: 'sse', url, inactivityDelaySec } satisfies OfrepEventStream])
      const text = `,"metadata":{"revision":${JSON.stringify(version.revision)}},"eventStreams":${streams},"refreshConnections":${streams}}`
      tail = { url: `${version.revision} ${url}`, bytes: Buffer.from(text) }
    }
    const { bytes } = tail
    // The answer's bytes copied from the per-set caches into reused memory: no string, no fresh buffer.
    const body = bodies.fill((memory) => {
      const end = ofrepBulkWrite(scope.flags, context, memory, memory.write(HEAD, 0, 'latin1'))
      if (end < 0 || end + bytes.length > memory.length) return -1
      memory.set(bytes, end)
      return end + bytes.length
    })
    return { etag, ...body }
  }
}

const HEAD = '{"flags":'

/** GET /configuration: the capabilities, with a strong ETag (304 on a match). */
function configurationRoute(name: string): RequestHandler {
  const configuration = JSON.stringify({ ...CONFIGURATION, name })
  const etag = `"${createHash('sha1').update(configuration).digest('base64url')}"`
  return (req, res) => {
    res.setHeader('ETag', etag)
    res.setHeader('Cache-Control', 'private, no-cache')
    if (ifNoneMatchHits(req.headers['if-none-match'], etag)) res.status(304).end()
    else res.type('application/json').send(configuration)
  }
}

function readContext(body: unknown): EvaluationContext {
  const read = ofrepReadRequest(body)
  if (read.ok) return read.context
  throw new HttpError('bad_request', read.errorDetails, { errorCode: read.errorCode })
}

const indexes = new WeakMap<readonly EvaluableFlag[], Map<string, EvaluableFlag>>()

/** Flags by key, built once per flag array (adapters hand out the same array until a change). */
function flagIndex(flags: readonly EvaluableFlag[]): Map<string, EvaluableFlag> {
  let index = indexes.get(flags)
  if (!index) {
    index = new Map()
    for (const flag of flags) if (typeof flag?.key === 'string') index.set(flag.key, flag)
    indexes.set(flags, index)
  }
  return index
}

/**
 * The version a refetchEvaluation named, from the contract's
 * `flagConfigEtag`/`flagConfigLastModified` or ADR 0008's
 * `sseEtag`/`sseLastModified`. The etag is the change revision this server
 * sent; a last-modified is unix seconds or an ISO date.
 */
function refetchMetadata(req: Request): Partial<OfrepVersion> {
  const etag = queryText(req, 'flagConfigEtag') ?? queryText(req, 'sseEtag')
  const modified = queryText(req, 'flagConfigLastModified') ?? queryText(req, 'sseLastModified')
  const out: Partial<OfrepVersion> = {}
  if (etag !== undefined) {
    const revision = Number(etag.replace(/^(?:W\/)?"|"$/g, ''))
    // An etag this server did not send (another server's, a cache's) names no version: the answer is the current one.
    if (Number.isSafeInteger(revision) && revision >= 0) out.revision = revision
  }
  if (modified !== undefined) {
    const seconds = /^\d+$/.test(modified) ? Number(modified) : Date.parse(modified) / 1000
    if (!Number.isFinite(seconds)) {
      throw new HttpError('bad_request', 'flagConfigLastModified must be unix seconds or an ISO 8601 date-time', {
        errorCode: 'PARSE_ERROR',
      })
    }
    out.lastModified = seconds
  }
  return out
}

function queryText(req: Request, name: string): string | undefined {
  const value = req.query[name]
  if (value === undefined) return undefined
  if (typeof value !== 'string')
    throw new HttpError('bad_request', `${name} must be given once`, { errorCode: 'PARSE_ERROR' })
  return value
}

function isNewer(asked: Partial<OfrepVersion>, version: OfrepVersion): boolean {
  return (
    (asked.revision !== undefined && asked.revision > version.revision) ||
    (asked.lastModified !== undefined && asked.lastModified > version.lastModified)
  )
}

/**
 * The refresh connection of a bulk answer: the router's /events (mounted at
 * `basePath`) on `origin`, absolute (a browser resolves a relative URL against
 * the page, not the API), with the request's key in `?key=` (Bearer, else
 * `X-API-Key`), since a browser's EventSource cannot send headers.
 * @example
 * eventsUrl('http://localhost:8080', '/ofrep/v1', { authorization: 'Bearer k' }) // 'http://localhost:8080/ofrep/v1/events?key=k'
 */
export function eventsUrl(origin: string, basePath: string, headers: IncomingHttpHeaders): string {
  const url = new URL(`${basePath}/events`, origin)
  const key = bearerToken(headers.authorization ?? apiKeyBearer(headers['x-api-key']))
  if (key !== undefined) url.searchParams.set('key', key)
  return url.href
}

/** OFREP's `X-API-Key` header stands for `Authorization: Bearer <key>` (a real Authorization header wins). */
const apiKeyHeader: RequestHandler = (req, _res, next) => {
  if (req.headers.authorization === undefined) req.headers.authorization = apiKeyBearer(req.headers['x-api-key'])
  next()
}

function apiKeyBearer(key: string | string[] | undefined): string | undefined {
  return typeof key === 'string' && key !== '' ? `Bearer ${key}` : undefined
}

/** Client errors leave with OFREP's `errorCode`/`errorDetails` beside `{error, code}`; server errors go on as they are. */
const ofrepErrorShape: ErrorRequestHandler = (err, _req, _res: Response, next) => {
  const error = toHttpError(err)
  if (error.status >= 500) return next(err)
  const errorCode =
    error.details.errorCode ??
    (error.status === 400 || error.status === 415 || error.status === 422 ? 'PARSE_ERROR' : 'GENERAL')
  next(new HttpError(error.code, error.message, { ...error.details, errorCode, errorDetails: error.message }))
}
