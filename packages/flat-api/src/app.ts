import { join } from 'node:path'
import { createReceiver, type ReceiverOptions } from '@flagsync/receiver'
import {
  bearerAuth,
  corsAllowList,
  errorHandler,
  HttpError,
  type Logger,
  notFound,
  securityHeaders,
} from '@flagsync/server-kit'
import express, { type Express, type RequestHandler } from 'express'
import { createAuditRouter } from './audit-router.js'
import type { FlagRuntime } from './flag-runtime.js'
import { createFlagsRouter } from './flags-router.js'
import { ofrepRoute } from './ofrep-route.js'
import { streamRoute } from './stream-route.js'

export interface FlatApiAppOptions {
  runtime: FlagRuntime
  /** When set, every route but /health (and the static console) needs `Authorization: Bearer <sdkKey>`. */
  sdkKey?: string
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
  app.use(securityHeaders())

  app.get('/health', (_req, res) => {
    res.type('text/plain').send('OK')
  })
  app.route('/health').all(methodNotAllowed('GET, HEAD'))

  const cors = options.corsOrigins?.length ? [corsAllowList(options.corsOrigins)] : []
  const auth = bearerAuth(sdkKey)
  // The audit trail names the token a write authenticated with: the SDK key, or the receiver's own token.
  const actor = sdkKey ? 'sdk-key' : null
  app.use('/api/flags', ...cors, auth, createFlagsRouter({ runtime, bodyLimit: options.bodyLimit, actor }))
  app.use(createAuditRouter(runtime, [...cors, auth]))
  // The browser's own EventSource cannot send headers: /stream also takes the key as ?sdk_key= (as document 1's does).
  const streamAuth = bearerAuth(sdkKey, { queryParam: 'sdk_key' })
  app.get('/stream', ...cors, streamAuth, streamRoute(runtime))
  // A stream client that sends Authorization from another origin (fetch, not EventSource) is preflighted.
  if (cors.length) app.options('/stream', ...cors)
  app.route('/stream').all(...cors, streamAuth, methodNotAllowed('GET, HEAD'))

  // OFREP (/ofrep/v1/…): the SDK key as Bearer or X-API-Key; its refresh stream also as ?key= (EventSource).
  app.use('/ofrep/v1', ...cors, ofrepRoute(runtime, auth))

  if (options.receiver !== false) {
    const receiverOptions = options.receiver ?? {}
    app.use(
      '/sync',
      createReceiver({
        corsOrigins: options.corsOrigins,
        logger,
        ...receiverOptions,
        token: receiverOptions.token ?? sdkKey,
        actor: receiverOptions.actor ?? (receiverOptions.token ? 'receiver-token' : sdkKey ? 'sdk-key' : undefined),
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
    app.use('/assets', express.static(assets, { immutable: true, maxAge: '365d', index: false, redirect: false }))
    app.use(express.static(options.staticDir, { index: 'index.html', maxAge: 0 }))
  }
  app.use(notFound)
  app.use(errorHandler(logger))
  return app
}

/** A known path called with a method it does not answer: 405 with `Allow`, not the 404 of an unknown path. */
function methodNotAllowed(allowed: string): RequestHandler {
  return (_req, res) => {
    res.setHeader('Allow', allowed)
    throw new HttpError('method_not_allowed', `use ${allowed}`)
  }
}
