import { join } from 'node:path'
import { createReceiver, type ReceiverOptions } from '@flagsync/receiver'
import {
  apiSecurityHeaders,
  bearerAuth,
  corsAllowList,
  errorHandler,
  HttpError,
  type Logger,
  methodNotAllowed,
  notFound,
  pageSecurityHeaders,
  presentedToken,
  secretsEqual,
} from '@flagsync/server-kit'
import express, { type Express, type Request, type RequestHandler } from 'express'
import { createAuditRouter } from './audit-router.js'
import type { FlagRuntime } from './flag-runtime.js'
import { createFlagsRouter } from './flags-router.js'
import { ofrepRoute } from './ofrep-route.js'
import { streamRoute } from './stream-route.js'

export interface FlatApiAppOptions {
  runtime: FlagRuntime
  /** When set, every route but /health (and the static console) needs `Authorization: Bearer <sdkKey>`. */
  sdkKey?: string
  /**
   * A key that may be shown in a web page (with `sdkKey` only): admitted by the flag reads (`GET /api/flags`,
   * `GET /api/flags/:key`, `/stream`) and OFREP (`/ofrep/v1/…`), 403 on every write, the audit trail and `/sync`.
   */
  clientKey?: string
  /** Mount the reference receiver at /sync (default on). Its token defaults to `sdkKey`. */
  receiver?: false | Omit<ReceiverOptions, 'store' | 'onCommit'>
  /** Largest flag body (default '1mb'). */
  bodyLimit?: number | string
  /** Origins allowed to call the API and stream from browsers. */
  corsOrigins?: readonly string[]
  /** A folder served at / (the flag console); files under its `assets/` are cached for a year (`immutable`). */
  staticDir?: string
  logger?: Logger
}

export function createFlatApiApp(options: FlatApiAppOptions): Express {
  const { runtime, sdkKey, logger } = options
  const app = express()
  app.disable('x-powered-by')
  app.set('etag', false) // list responses carry their own ETag per revision
  // The API's compact set on every answer; a static file of the console gets helmet's full set for pages instead.
  app.use(apiSecurityHeaders())

  app.get('/health', (_req, res) => {
    res.type('text/plain').send('OK')
  })
  app.route('/health').all(methodNotAllowed('GET, HEAD'))

  const cors = options.corsOrigins?.length ? [corsAllowList(options.corsOrigins)] : []
  const keys = keyAuth(sdkKey, options.clientKey)
  const auth = keys.refuseClient
  // The audit trail names the token a write authenticated with: the SDK key, or the receiver's own token.
  const actor = sdkKey ? 'sdk-key' : null
  app.use('/api/flags', ...cors, keys.readsOnly, createFlagsRouter({ runtime, bodyLimit: options.bodyLimit, actor }))
  app.use(createAuditRouter(runtime, [...cors, auth]))
  // The browser's own EventSource cannot send headers: /stream also takes the key as ?sdk_key= (as the flag service's does).
  const streamAuth = keys.stream
  app.get('/stream', ...cors, streamAuth, streamRoute(runtime))
  // A stream client that sends Authorization from another origin (fetch, not EventSource) is preflighted.
  if (cors.length) app.options('/stream', ...cors)
  app.route('/stream').all(...cors, streamAuth, methodNotAllowed('GET, HEAD'))
  // OFREP (/ofrep/v1/…) admits both keys, as Bearer or X-API-Key; its refresh stream also as ?key= (EventSource).
  app.use('/ofrep/v1', ...cors, ofrepRoute(runtime, keys.ofrep))

  if (options.receiver !== false) {
    const receiverOptions = options.receiver ?? {}
    app.use(
      '/sync',
      keys.refuseClientOnly,
      createReceiver({
        corsOrigins: options.corsOrigins,
        logger,
        ...receiverOptions,
        token: receiverOptions.token ?? sdkKey,
        // A token of its own: the receiver names it ('receiver-token'); the SDK key: the same name as the flag writes.
        actor: receiverOptions.actor ?? (receiverOptions.token ? undefined : (actor ?? undefined)),
        store: runtime.store,
        onCommit: (changes) => runtime.feed.ingest(changes),
      }),
    )
  }

  // After the API: a request for /api/... or /stream never touches the disk looking for a file.
  if (options.staticDir) {
    // assets/ holds content-hashed files (Vite's layout): a new build gives new names, so a browser keeps them without
    // asking again (as the flag service's dashboard route does). A folder's index.html is left to the static below,
    // like everything else there (index.html, a service worker): revalidated on each load, or a new build never shows.
    const assets = join(options.staticDir, 'assets')
    const setHeaders = pageSecurityHeaders()
    app.use(
      '/assets',
      express.static(assets, { immutable: true, maxAge: '365d', index: false, redirect: false, setHeaders }),
    )
    app.use(express.static(options.staticDir, { index: 'index.html', maxAge: 0, setHeaders }))
  }
  app.use(notFound)
  app.use(errorHandler(logger))
  return app
}

const CLIENT_KEY_SCOPE =
  'the client key (CLIENT_KEY) only reads flags: GET /api/flags, GET /api/flags/:key, /stream and /ofrep/v1/…; use the SDK key for anything else'

const isRead = (req: Request) => req.method === 'GET' || req.method === 'HEAD'

/**
 * Where each key is admitted, in one place: the SDK key everywhere, the client key (a page may show it) only
 * on the flag reads, /stream and OFREP. A client key elsewhere is a 403 naming what it may do.
 */
function keyAuth(sdkKey: string | undefined, clientKey: string | undefined) {
  const client = (clientKeyAllowed: (req: Request) => boolean) => ({
    clientKey,
    clientKeyAllowed,
    clientKeyRefusal: CLIENT_KEY_SCOPE,
  })
  const never = () => false
  return {
    /** Writes and the audit trail: the SDK key only. */
    refuseClient: bearerAuth(sdkKey, client(never)),
    /** /api/flags: the client key may read. */
    readsOnly: bearerAuth(sdkKey, client(isRead)),
    /** /stream: both keys, also as ?sdk_key= (EventSource cannot send headers). */
    stream: bearerAuth(sdkKey, { queryParam: 'sdk_key', ...client(() => true) }),
    /** /ofrep/v1/…: both keys (the OFREP router turns X-API-Key and its refresh URL's ?key= into the Bearer). */
    ofrep: bearerAuth(
      sdkKey,
      client(() => true),
    ),
    /** /sync checks its own token; this only turns the client key away with a 403 instead of its 401. */
    refuseClientOnly: ((req, _res, next) => {
      const given = presentedToken(req)
      if (clientKey && sdkKey && given !== undefined && secretsEqual(given, clientKey)) {
        throw new HttpError('forbidden', CLIENT_KEY_SCOPE, { key_kind: 'client' })
      }
      next()
    }) as RequestHandler,
  }
}
