import { auditQuerySchema, flagKeySchema } from '@flagsync/protocol'
import { HttpError, methodNotAllowed, parseOr422 } from '@flagsync/server-kit'
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
    const query = parseOr422(auditQuerySchema, req.query, 'query')
    sendPage(res, await runtime.audit.history(key, toStoreQuery(query)))
  })

  router.get('/api/changes', ...guard, async (req, res) => {
    const query = parseOr422(auditQuerySchema, req.query, 'query')
    sendPage(res, await runtime.audit.changes(toStoreQuery(query)))
  })

  router.all('/api/flags/:key/history', ...guard, methodNotAllowed('GET'))
  router.all('/api/changes', ...guard, methodNotAllowed('GET'))
  return router
}

function toStoreQuery(query: { since?: number; cursor?: number; limit?: number }) {
  return { since: query.since, cursor: query.cursor, limit: query.limit ?? 100 }
}

function sendPage(res: Response, page: AuditPage): void {
  res.setHeader('Cache-Control', 'no-store')
  res.json(auditPageToWire(page))
}
