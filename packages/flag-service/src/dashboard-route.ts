import { existsSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { HttpError, methodNotAllowed, pageSecurityHeaders } from '@flagsync/server-kit'
import express, { type RequestHandler, Router } from 'express'

/** Paths that belong to the API and the SDK routes: the SPA fallback never answers them, so their JSON 404s stay. */
const API_PATHS = /^\/(api|stream|flags|health)(\/|$)/

/**
 * The built dashboard (`@flagsync/dashboard`'s `dist/`) when that package is
 * installed next to the service, else undefined. Resolved through the
 * package's `package.json`, so no deep import of its code is needed, and
 * optional: the service is published without the (private) dashboard.
 */
export function installedDashboardDir(resolve: (id: string) => string = createRequire(import.meta.url).resolve) {
  try {
    const dir = join(dirname(resolve('@flagsync/dashboard/package.json')), 'dist')
    return existsSync(join(dir, 'index.html')) ? dir : undefined
  } catch {
    return undefined
  }
}

/**
 * The directory to serve for DASHBOARD_DIR: unset serves the installed
 * dashboard (if built), `off` serves none, anything else is a directory with
 * an index.html.
 */
export function resolveDashboardDir(setting: string | undefined): string | undefined {
  if (setting === 'off') return undefined
  return setting || installedDashboardDir()
}

/**
 * Static files of the dashboard, its index.html at `/`, and for any other
 * GET whose Accept names text/html (so client-side routes such as
 * /projects/abc survive a reload).
 * Mounted after every API router: a file can never shadow a route, and
 * `/api/...`, `/stream`, `/flags/...` keep their JSON 404s.
 */
export function dashboardRoute(dir: string): Router {
  const router = Router()
  const index = join(dir, 'index.html')
  // Helmet's set for pages on each file and on index.html as they are sent; a path nothing answers keeps the API's.
  const setHeaders = pageSecurityHeaders()
  const files = express.static(dir, { index: false, maxAge: 0, fallthrough: true, setHeaders })
  const notApi: RequestHandler = (req, _res, next) => {
    if (API_PATHS.test(req.path)) return next('router')
    next()
  }
  router.use(notApi)
  // Hashed assets may be cached for good; sw.js and index.html must be revalidated, or a new build never arrives.
  router.use(
    '/assets',
    express.static(join(dir, 'assets'), { immutable: true, maxAge: '365d', fallthrough: true, setHeaders }),
  )
  router.use(files)
  router.get(/.*/, (req, res, next) => {
    // A browser's navigation names text/html; API clients sending */* keep the JSON 404 for a path that does not exist.
    if (req.path !== '/' && !/\btext\/html\b/.test(req.headers.accept ?? '')) return next()
    res.setHeader('Cache-Control', 'no-cache')
    setHeaders(res)
    res.sendFile(index, (error?: Error) => {
      // index.html gone since the start (checked then): say so, instead of the generic "malformed request".
      if (error && !res.headersSent) {
        next(new HttpError('not_found', `not found: the dashboard has no index.html in ${JSON.stringify(dir)}`))
      }
    })
  })
  // `/` is the dashboard's own path: another method is a 405 naming the ones it answers, as on every known path.
  router.all('/', methodNotAllowed('GET, HEAD'))
  return router
}
