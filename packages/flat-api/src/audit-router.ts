import { flagKeySchema } from '@flagsync/protocol'
import { auditQueryOf, HttpError, methodNotAllowed } from '@flagsync/server-kit'
import { type AuditPage, auditPageToWire } from '@flagsync/store'
import { type Request, type RequestHandler, type Response, Router } from 'express'
import type { FlagRuntime } from './flag-runtime.js'

/**
 * The audit routes: `GET /api/flags/:key/history` and `GET /api/changes`,
 * newest first, a page at a time (`nextCursor`), deleted flags included.
 * `guard` (CORS, the bearer check) runs on these paths only.
 */
export function createAuditRouter(runtime: FlagRuntime, guard: RequestHandler[]): Router {
  const router = Router()

  router.get('/api/flags/:key/history', ...guard, async (req: Request<{ key: string }>, res) => {
    const { key } = req.params
    if (!flagKeySchema.safeParse(key).success) {
      throw new HttpError('not_found', `no flag with key ${JSON.stringify(key)}`)
    }
    sendPage(res, await runtime.audit.history(key, auditQueryOf(req.query)))
  })

  router.get('/api/changes', ...guard, async (req, res) => {
    sendPage(res, await runtime.audit.changes(auditQueryOf(req.query)))
  })

  router.all('/api/flags/:key/history', ...guard, methodNotAllowed('GET'))
  router.all('/api/changes', ...guard, methodNotAllowed('GET'))
  return router
}

function sendPage(res: Response, page: AuditPage): void {
  res.setHeader('Cache-Control', 'no-store')
  res.json(auditPageToWire(page))
}
