import { HttpError, parseOr422 } from '@flagsync/server-kit'
import { type Request, Router } from 'express'
import knexFactory, { type Knex } from 'knex'
import type { EnvironmentAccess } from '../auth/context.js'
import { authOf, environmentOf, requireProjectRole } from '../auth/guards.js'
import { allowOnly, jsonBodyFor, noContent, type RouterOptions } from '../http.js'
import type { ServiceRuntime } from '../service-runtime.js'
import { KnownKeys } from './known-keys.js'
import { listImpressions } from './list.js'
import { fastImpressionRows, impressionBatchSchema, listQuerySchema, statsQuerySchema } from './schemas.js'
import { impressionStatsPage } from './stats.js'
import { IMPRESSION_LIMITS } from './tables.js'
import type { ImpressionRow } from './types.js'
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

/**
 * The connection ingest writes on. On a SQLite file it is a connection of its
 * own, next to the runtime's one: every request's SDK key and environment
 * lookups (and every other query of the service) would otherwise queue behind
 * each group's transaction and run between two groups, one at a time, while
 * the database waits. WAL lets them read while ingest writes. Writers of the
 * two connections take turns on SQLite's write lock as separate processes do
 * (`busy_timeout`; the flag store and the retention job take the lock with
 * their first statement, and so does ingest). PostgreSQL and `:memory:` use
 * the runtime's pool.
 */
function ingestKnex(runtime: ServiceRuntime): { knex: Knex; close(): Promise<void> } {
  const config = runtime.db.config
  if (config.dialect !== 'sqlite' || config.filename === ':memory:') {
    return { knex: runtime.knex, close: async () => {} }
  }
  const knex = knexFactory({
    client: 'sqlite3',
    connection: { filename: config.filename },
    useNullAsDefault: true,
    pool: {
      min: 1,
      max: 1,
      // The runtime's connection settings (the file is in WAL mode already).
      afterCreate(conn: SqliteConnection, done: (err: Error | null, conn: SqliteConnection) => void) {
        conn.exec('PRAGMA synchronous = NORMAL; PRAGMA busy_timeout = 5000; PRAGMA foreign_keys = ON;', (err) =>
          done(err, conn),
        )
      },
    },
  })
  return { knex, close: () => knex.destroy() }
}

interface SqliteConnection {
  exec(sql: string, callback: (err: Error | null) => void): void
}

/** The runtime's one group-commit writer (closing the runtime waits for what it holds). */
function writerOf(runtime: ServiceRuntime): ImpressionWriter {
  let writer = writers.get(runtime)
  if (!writer) {
    const connection = ingestKnex(runtime)
    const created = new ImpressionWriter(connection.knex, runtime.db.config.dialect)
    writers.set(runtime, created)
    runtime.onClose(async () => {
      await created.whenIdle()
      await connection.close()
    })
    writer = created
  }
  return writer
}

/** Unknown keys named in an answer at most (a batch of invented keys would otherwise echo them all). */
const UNKNOWN_KEYS_NAMED = 20

/** The 200 of a batch with impressions of flag keys the environment does not have (the others are stored). */
function ignoredAnswer(stored: number, ignored: number, unknownKeys: string[]) {
  return {
    stored,
    ignored_unknown_keys: ignored,
    unknown_flag_keys: unknownKeys.slice(0, UNKNOWN_KEYS_NAMED),
  }
}

/**
 * /api/environments/:env_id/impressions (after `authenticate` and `loadEnvironment`):
 * - POST: SDK key of this environment only (the flag service's authentication rules: no admin role needed); users report nothing;
 * - GET and GET /stats: project viewers and up, and the environment's SDK key; /stats answers the array
 *   without paging parameters and `{items, next_cursor}` with `limit` or `cursor`.
 */
export function createImpressionsRouter(runtime: ServiceRuntime, options: RouterOptions = {}): Router {
  const router = Router({ mergeParams: true })
  const { knex } = runtime
  const dialect = runtime.db.config.dialect
  const writer = writerOf(runtime)
  const known = new KnownKeys(knex, runtime.clock)

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
    const valid = fastImpressionRows(req.body, receivedAt) ?? rowsOf(req.body, receivedAt)
    const { rows, ignored, unknownKeys } = await known.sort(env.id, valid)
    if (rows.length > 0) await writer.write({ environmentId: env.id, rows, receivedAt })
    if (ignored === 0) {
      noContent(res)
      return
    }
    res.json(ignoredAnswer(rows.length, ignored, unknownKeys))
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
    const query = parseOr422(statsQuerySchema, req.query, 'impression stats query')
    if (query.limit === undefined && query.cursor === undefined) {
      const page = await impressionStatsPage(knex, env.id, { limit: IMPRESSION_LIMITS.statsUnpaged })
      // The array stays bounded: past the bound a Link names the paged form's next page.
      if (page.next_cursor !== null) {
        res.setHeader(
          'Link',
          `<${req.baseUrl}/stats?limit=${IMPRESSION_LIMITS.statsPageMax}&cursor=${page.next_cursor}>; rel="next"`,
        )
      }
      res.json(page.items)
      return
    }
    res.json(
      await impressionStatsPage(knex, env.id, {
        limit: query.limit ?? IMPRESSION_LIMITS.statsPageDefault,
        cursor: query.cursor,
      }),
    )
  })

  allowOnly(router, '/', 'GET, POST')
  allowOnly(router, '/stats', 'GET')
  return router
}
