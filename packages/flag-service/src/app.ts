import { apiSecurityHeaders, corsAllowList, errorHandler, HttpError, notFound } from '@flagsync/server-kit'
import { toStoreError } from '@flagsync/store'
import express, { type ErrorRequestHandler, type Express, Router } from 'express'
import { authenticate } from './auth/authenticate.js'
import { createAuthRouter } from './auth/routes.js'
import { dashboardRoute } from './dashboard-route.js'
import { type FlagStreamOptions, mountFlagFeature } from './flags/index.js'
import { allowOnly } from './http.js'
import { type ImpressionRetention, mountImpressionFeature } from './impressions/index.js'
import { mountOfrepFeature } from './ofrep/mount.js'
import { createProjectsRouter } from './projects/routes.js'
import { mountScheduleFeature } from './schedules/index.js'
import type { ServiceRuntime } from './service-runtime.js'
import { createTokensRouter } from './tokens/routes.js'
import { createUsersRouter } from './users/routes.js'
import { mountWebhookFeature } from './webhooks/index.js'
import type { WebhookSettings } from './webhooks/settings.js'

export interface ServiceAppOptions {
  /** Largest JSON body (default '1mb'). */
  bodyLimit?: number | string
  /** Origins allowed to call the API from browsers (Bearer credentials; the cookie is SameSite=Strict). */
  corsOrigins?: readonly string[]
  /** `Secure` on the session cookie (default 'auto': when the request came over HTTPS). */
  cookieSecure?: boolean | 'auto'
  /** /stream settings (keep-alive, poll interval, slow-subscriber buffer); defaults when absent. */
  stream?: FlagStreamOptions
  /** How long impressions are kept and how often the job prunes them (default 30 days, hourly). */
  impressionRetention?: ImpressionRetention
  /** A built dashboard (index.html and assets) to serve at `/`; none when absent (the CLI passes DASHBOARD_DIR's). */
  dashboardDir?: string
  /** Webhook delivery: private targets, timeouts, retries, when a failing webhook is disabled (the defaults when absent). */
  webhooks?: WebhookSettings
  /** How often, in ms, the schedule runner looks for schedules other instances created (default 1 000). */
  schedulePollMs?: number
  /** After how many days a flag serving one value, or not evaluated, reads as stale (default 30). */
  staleAfterDays?: number
}

/**
 * Most service routes query knex directly, not through the flag store, so a
 * driver's error reaches the handler raw and would be a 500. A busy or
 * unreachable database (another connection holding SQLite's write lock, say
 * ingest's under load) is the store's `unavailable`: 503 with Retry-After.
 * A value PostgreSQL cannot store (NUL in text, a number out of its column's
 * range) is the store's `validation_failed`: 422, as at the store's routes.
 * The schemas refuse such values first, naming the field; this is the net
 * for one they miss, so that it is never a 5xx.
 */
export const databaseFailures: ErrorRequestHandler = (error, _req, _res, next) => {
  const normalized = error instanceof HttpError ? undefined : toStoreError(error)
  next(normalized?.code === 'unavailable' || normalized?.code === 'validation_failed' ? normalized : error)
}

/**
 * The flag service's HTTP app: /health, /api/auth, /api/users, /api/tokens and
 * /api/projects (with members, environments and SDK keys), JSON errors for
 * everything else.
 */
export function createServiceApp(runtime: ServiceRuntime, options: ServiceAppOptions = {}): Express {
  const app = express()
  app.disable('x-powered-by')
  // The API's compact set on every answer; the dashboard's pages and files get helmet's full set as they are sent.
  app.use(apiSecurityHeaders())

  // A router of its own: app.all registers every method as a route, router.all one catch-all.
  const health = Router()
  health.get('/health', (_req, res) => {
    res.type('text/plain').send('OK')
  })
  allowOnly(health, '/health', 'GET')
  app.use(health)

  if (options.corsOrigins?.length) app.use(corsAllowList(options.corsOrigins))
  const routerOptions = { bodyLimit: options.bodyLimit }
  const auth = authenticate(runtime)

  // Login and the public workspace route must work without (or despite) credentials; logout and me authenticate themselves.
  app.use('/api/auth', createAuthRouter(runtime, { ...routerOptions, cookieSecure: options.cookieSecure }))
  app.use('/api/users', auth, createUsersRouter(runtime, routerOptions))
  app.use('/api/tokens', auth, createTokensRouter(runtime, routerOptions))
  app.use('/api/projects', auth, createProjectsRouter(runtime, routerOptions))
  mountScheduleFeature(app, runtime, { auth, routerOptions, schedulePollMs: options.schedulePollMs })
  mountFlagFeature(app, runtime, { auth, routerOptions, flags: options.stream, staleAfterDays: options.staleAfterDays })
  mountOfrepFeature(app, runtime, { auth, routerOptions, flags: options.stream })
  mountImpressionFeature(app, runtime, { auth, routerOptions, impressionRetention: options.impressionRetention })
  mountWebhookFeature(app, runtime, { auth, routerOptions, webhooks: options.webhooks })
  if (options.dashboardDir) app.use(dashboardRoute(options.dashboardDir))

  app.use(notFound)
  app.use(databaseFailures)
  app.use(errorHandler(runtime.logger))
  return app
}
