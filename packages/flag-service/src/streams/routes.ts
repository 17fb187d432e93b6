import { HttpError, ifNoneMatchHits, keyFromQuery } from '@flagsync/server-kit'
import { type RequestHandler, Router } from 'express'
import type { AuthContext, AuthUser } from '../auth/context.js'
import { authOf, projectRole } from '../auth/guards.js'
import { isSdkKeySecret } from '../auth/secrets.js'
import { sessionCookieValue, sessionUser } from '../auth/sessions.js'
import { environmentsInOrder } from '../environments/queries.js'
import { allowOnly } from '../http.js'
import { UUID_PATTERN } from '../schemas.js'
import type { ServiceRuntime } from '../service-runtime.js'
import { tokenUser } from '../tokens/queries.js'
import type { EnvironmentRef, FlagStreams } from './flag-streams.js'

/**
 * Browsers' EventSource cannot send headers, so `/stream` (and the snapshot)
 * also take the key as `?sdk_key=sk_live_…`, verified by `authenticate` as the
 * Bearer header it stands for. A real Authorization header wins; the query
 * form accepts SDK keys only.
 */
const sdkKeyFromQuery = keyFromQuery('sdk_key', {
  accepts: isSdkKeySecret,
  what: 'one SDK key (sk_live_… or pk_live_…)',
})

/** /stream and /flags/snapshot. */
export function createStreamRouter(runtime: ServiceRuntime, streams: FlagStreams, auth: RequestHandler): Router {
  const router = Router()

  // Express runs this handler for HEAD too. A HEAD cannot read a stream: it is authenticated and
  // checked as the GET would be, then answered with the GET's status and headers at once.
  router.get('/stream', sdkKeyFromQuery, auth, async (req, res) => {
    const caller = authOf(req)
    const head = req.method === 'HEAD'
    if (caller.kind === 'sdk_key' && caller.sdkKey) {
      const key = caller.sdkKey
      refuseOtherEnvironment(req.query.environment_id, key.environmentId)
      if (head) return streams.answerHead(req, res)
      await streams.current()
      await streams.openEnvironmentStream(req, res, key) // bootstrap (or resume) and subscription in one tick
      return
    }
    const environments = await dashboardEnvironments(runtime, caller, req.query.environment_id)
    if (head) return streams.answerHead(req, res)
    const userNow = currentUser(runtime, caller, sessionCookieValue(req))
    const stillAllowed = accessCheck(runtime, caller, userNow, environments)
    // Without environment_id the connection follows everything its user can see, now and later.
    const visibleNow =
      req.query.environment_id === undefined
        ? async () => {
            const user = await userNow()
            return user ? dashboardEnvironments(runtime, { ...caller, user }, undefined) : []
          }
        : undefined
    await streams.current()
    await streams.openDashboardStream(req, res, environments, stillAllowed, visibleNow)
  })

  router.get('/flags/snapshot', sdkKeyFromQuery, auth, async (req, res) => {
    const caller = authOf(req)
    if (caller.kind !== 'sdk_key' || !caller.sdkKey) {
      throw new HttpError(
        'bad_request',
        'the snapshot is keyed by an SDK key (Authorization: Bearer sk_live_…); dashboards read GET /api/environments/{env_id}/flags',
      )
    }
    await streams.current()
    const { body, etag } = streams.snapshot(caller.sdkKey.environmentId, caller.sdkKey.projectId)
    res.setHeader('ETag', etag)
    res.setHeader('Cache-Control', 'private, no-cache')
    if (ifNoneMatchHits(req.headers['if-none-match'], etag)) {
      res.status(304).end()
      return
    }
    res.type('application/json').send(body)
  })

  allowOnly(router, '/stream', 'GET')
  allowOnly(router, '/flags/snapshot', 'GET')
  return router
}

/**
 * Whether a dashboard connection may still follow its environments: its
 * session is live (or its token exists and has not expired), and its user
 * still sees every project it follows (re-read, so role changes count).
 */
function accessCheck(
  runtime: ServiceRuntime,
  caller: AuthContext,
  userNow: () => Promise<AuthUser | undefined>,
  environments: readonly EnvironmentRef[],
): () => Promise<boolean> {
  const projects = [...new Set(environments.map((e) => e.projectId))]
  return async () => {
    const user = await userNow()
    if (!user) return false
    for (const projectId of projects) {
      if (!(await projectRole(runtime, { ...caller, user }, projectId))) return false
    }
    return true
  }
}

/** The connection's user as the database has it now (role included); undefined once its session or token ended. */
function currentUser(
  runtime: ServiceRuntime,
  caller: AuthContext,
  sessionId: string | undefined,
): () => Promise<AuthUser | undefined> {
  return async () => {
    if (caller.kind === 'session') return sessionId === undefined ? undefined : sessionUser(runtime, sessionId)
    if (caller.kind === 'pat' && caller.tokenId !== undefined)
      return tokenUser(runtime.knex, caller.tokenId, runtime.clock())
    return undefined
  }
}

/**
 * An SDK key streams its own environment. Naming another one is a misconfigured SDK: refused, not re-scoped (it would
 * evaluate the key's environment while its owner believes it follows the one named); an empty one asks for a
 * dashboard's people events, which no SDK gets.
 */
function refuseOtherEnvironment(named: unknown, own: string): void {
  if (named === '') {
    throw new HttpError(
      'forbidden',
      'an empty environment_id (people events alone) is for dashboard sessions; an SDK key streams its own environment: drop environment_id',
    )
  }
  if (named !== undefined && named !== own) {
    throw new HttpError(
      'forbidden',
      `this SDK key belongs to environment ${own}; environment_id names another (drop it or use that environment's key)`,
    )
  }
}

const MAX_LISTED_ENVIRONMENTS = 100

/**
 * The environments a dashboard connection follows: those named by
 * `environment_id` (repeated or comma-separated; each must be visible to the
 * caller, else 404), none for an empty `environment_id=`, or every environment the caller can see.
 */
async function dashboardEnvironments(
  runtime: ServiceRuntime,
  auth: AuthContext,
  raw: unknown,
): Promise<EnvironmentRef[]> {
  const listed = (Array.isArray(raw) ? raw : raw === undefined ? [] : [raw])
    .flatMap((v) => String(v).split(','))
    .map((v) => v.trim())
    .filter((v) => v !== '')
  if (listed.length > MAX_LISTED_ENVIRONMENTS) {
    throw new HttpError('validation_failed', `environment_id: at most ${MAX_LISTED_ENVIRONMENTS} environments`, {
      issues: [{ path: 'environment_id', message: `at most ${MAX_LISTED_ENVIRONMENTS} environments` }],
    })
  }
  // `?environment_id=` naming none: a stream of the dashboard events alone (`people`), for pages without flags.
  if (raw !== undefined && listed.length === 0) return []
  if (listed.length > 0) {
    const bad = listed.find((id) => !UUID_PATTERN.test(id))
    if (bad !== undefined) throw new HttpError('not_found', `no environment ${JSON.stringify(bad)}`)
    const rows = await environmentsInOrder(runtime.knex, { ids: [...new Set(listed)] })
    const roles = new Map<string, unknown>()
    for (const row of rows) {
      if (!roles.has(row.project_id)) roles.set(row.project_id, await projectRole(runtime, auth, row.project_id))
    }
    const visible = rows.filter((r) => roles.get(r.project_id) !== undefined)
    const missing = listed.find((id) => !visible.some((r) => r.id === id))
    if (missing !== undefined) throw new HttpError('not_found', `no environment ${JSON.stringify(missing)}`)
    return visible.map((r) => ({ id: r.id, projectId: r.project_id }))
  }
  const user = auth.user
  if (!user) return []
  const rows = await environmentsInOrder(runtime.knex, user.role === 'admin' ? 'all' : { memberOf: user.id })
  return rows.map((r) => ({ id: r.id, projectId: r.project_id }))
}
