import { HttpError, parseOr422 } from '@flagsync/server-kit'
import { type Request, Router } from 'express'
import type { EnvironmentAccess } from '../auth/context.js'
import { authOf, environmentOf, requireProjectRole } from '../auth/guards.js'
import { allowOnly, jsonBodyFor, noContent, type RouterOptions } from '../routes/common.js'
import type { ServiceRuntime } from '../service-runtime.js'
import { fastImpressionRows, impressionBatchSchema, listQuerySchema } from './schemas.js'
import { type ImpressionRow, impressionStats, listImpressions } from './store.js'
import { IMPRESSION_LIMITS } from './tables.js'
import { ImpressionWriter } from './writer.js'

/**
 * An SDK key reaches only its own environment's impressions. `loadEnvironment`
 * already answered 404 for an environment outside the key's project; another
 * environment of the same project is a 403 (the key can see it exists).
 */
function requireKeyOfThisEnvironment(req: Request, env: EnvironmentAccess): void {
  const auth = authOf(req)
  if (auth.kind === 'sdk_key' && auth.sdkKey?.environmentId !== env.id) {
    throw new HttpError(
      'forbidden',
      'this SDK key is bound to another environment: it reports and reads the impressions of its own environment only',
    )
  }
}

/** The batch through the schema: the rows, or the 422 naming each failing field. */
export function rowsOf(body: unknown, receivedAt: number): ImpressionRow[] {
  const items = parseOr422(impressionBatchSchema, body, 'impressions')
  return items.map((item) => ({
    flag_key: item.flag_key,
    user_id: item.user_id ?? null,
    value: item.value,
    context: item.context ?? null,
    evaluated_at: item.evaluated_at ?? receivedAt,
  }))
}

const writers = new WeakMap<ServiceRuntime, ImpressionWriter>()

/** The runtime's one group-commit writer (closing the runtime waits for what it holds). */
export function writerOf(runtime: ServiceRuntime): ImpressionWriter {
  let writer = writers.get(runtime)
  if (!writer) {
    const created = new ImpressionWriter(runtime.knex, runtime.db.config.dialect)
    writers.set(runtime, created)
    runtime.onClose(() => created.whenIdle())
    writer = created
  }
  return writer
}

/**
 * /api/environments/:env_id/impressions (after `authenticate` and `loadEnvironment`):
 * - POST: SDK key of this environment only (document 1 §5.9: no admin role needed); users report nothing;
 * - GET and GET /stats: project viewers and up, and the environment's SDK key.
 */
export function createImpressionsRouter(runtime: ServiceRuntime, options: RouterOptions = {}): Router {
  const router = Router({ mergeParams: true })
  const { knex } = runtime
  const dialect = runtime.db.config.dialect
  const writer = writerOf(runtime)

  router.post('/', ...jsonBodyFor(options), async (req, res) => {
    const env = environmentOf(req)
    const auth = authOf(req)
    if (auth.kind !== 'sdk_key') {
      throw new HttpError(
        'forbidden',
        "impressions are reported with the environment's SDK key (Authorization: Bearer sk_live_…), not as a user",
      )
    }
    requireKeyOfThisEnvironment(req, env)
    const receivedAt = runtime.clock()
    if (Array.isArray(req.body) && req.body.length > IMPRESSION_LIMITS.batch) {
      throw new HttpError(
        'payload_too_large',
        `at most ${IMPRESSION_LIMITS.batch} impressions per request (got ${req.body.length}): split the batch`,
        { max_items: IMPRESSION_LIMITS.batch },
      )
    }
    const rows = fastImpressionRows(req.body, receivedAt) ?? rowsOf(req.body, receivedAt)
    await writer.write({ environmentId: env.id, rows, receivedAt })
    noContent(res)
  })

  router.get('/', requireProjectRole('viewer'), async (req, res) => {
    const env = environmentOf(req)
    requireKeyOfThisEnvironment(req, env)
    const query = parseOr422(listQuerySchema, req.query, 'impression query')
    res.json(await listImpressions(knex, dialect, env.id, query))
  })

  router.get('/stats', requireProjectRole('viewer'), async (req, res) => {
    const env = environmentOf(req)
    requireKeyOfThisEnvironment(req, env)
    res.json(await impressionStats(knex, env.id))
  })

  allowOnly(router, '/', 'GET, POST')
  allowOnly(router, '/stats', 'GET')
  return router
}
