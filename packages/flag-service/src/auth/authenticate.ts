import { bearerToken, HttpError } from '@flagsync/server-kit'
import type { RequestHandler } from 'express'
import type { ServiceRuntime } from '../service-runtime.js'
import { SERVICE_TABLES } from '../tables.js'
import type { AuthContext, Role, TokenScope } from './context.js'
import { hashesEqual, hashSecret, isSdkKeySecret, PAT_PREFIX, type SdkKeyKind } from './secrets.js'
import { sessionCookieValue, sessionUser } from './sessions.js'

/** `last_used_at` is written at most once a minute per token, so reads do not each cost a write. */
const LAST_USED_RESOLUTION_MS = 60_000

const CSRF_HEADER = 'x-service-request'
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS'])

/** Whether a method changes state (CSRF and read_only tokens apply to these). */
const isStateChange = (method: string) => !SAFE_METHODS.has(method.toUpperCase())

const unauthorized = (message: string) => new HttpError('unauthorized', message)

/**
 * Sets `req.auth` from `Authorization: Bearer sk_live_…` or `pk_live_…` (SDK key),
 * `Authorization: Bearer pat_…` (personal access token) or the session cookie.
 * An Authorization header that does not authenticate is a 401 (it never falls
 * back to the cookie); a missing, expired or unknown cookie simply leaves
 * `req.auth` unset, and guards answer 401 where a caller is needed.
 *
 * A client key (`pk_live_…`) is admitted only where `clientKeyMay` says, on
 * every route, so no route can forget it. Two rules hold for every
 * state-changing request (POST, PATCH, PUT, DELETE):
 * - a session-authenticated one must carry `X-Service-Request: true` (CSRF), else 403;
 * - a read_only personal access token is refused with 403.
 */
export function authenticate(runtime: ServiceRuntime): RequestHandler {
  return async (req, res, next) => {
    const header = req.headers.authorization
    let auth: AuthContext | undefined
    if (header !== undefined) {
      const secret = bearerToken(header)
      res.setHeader('WWW-Authenticate', 'Bearer')
      if (secret === undefined) {
        throw unauthorized('Authorization must be "Bearer <SDK key or personal access token>"')
      }
      if (isSdkKeySecret(secret)) auth = await sdkKeyAuth(runtime, secret)
      else if (secret.startsWith(PAT_PREFIX)) auth = await tokenAuth(runtime, secret)
      if (!auth) throw unauthorized('invalid credentials')
      res.removeHeader('WWW-Authenticate')
    } else {
      const sid = sessionCookieValue(req)
      const user = sid === undefined ? undefined : await sessionUser(runtime, sid)
      if (user && sid !== undefined) auth = { kind: 'session', user, sessionHash: hashSecret(sid) }
    }
    req.auth = auth
    if (auth?.sdkKey?.kind === 'client' && !clientKeyMay(req.method, req.originalUrl, auth.sdkKey.environmentId)) {
      throw new HttpError('forbidden', CLIENT_KEY_SCOPE, { key_kind: 'client' })
    }
    if (auth && isStateChange(req.method)) {
      if (auth.kind === 'session' && req.headers[CSRF_HEADER] !== 'true') {
        throw new HttpError(
          'forbidden',
          'state-changing requests with a session need the header X-Service-Request: true',
        )
      }
      if (auth.kind === 'pat' && auth.tokenScope === 'read_only') {
        throw new HttpError(
          'forbidden',
          'this personal access token is read_only: it cannot change anything (or create tokens); use a read_write token',
        )
      }
    }
    next()
  }
}

const CLIENT_KEY_SCOPE =
  'a client key (pk_live_…) may only evaluate flags (OFREP, /ofrep/v1/…) and report impressions for its environment (POST /api/environments/<its environment>/impressions); use a server key (sk_live_…) or a personal access token for anything else'

const IMPRESSIONS_PATH = /^\/api\/environments\/([^/]+)\/impressions\/?$/

/**
 * The one list of what a client key may do: any OFREP route (the key's
 * environment is what they evaluate) and reporting impressions to its own
 * environment. It reads the path as Express routes it (case-insensitively,
 * undecoded), so no spelling of a refused route slips through.
 */
function clientKeyMay(method: string, originalUrl: string, environmentId: string): boolean {
  const path = (originalUrl.split('?')[0] ?? '').toLowerCase()
  if (path.startsWith('/ofrep/v1/')) return true
  const impressions = IMPRESSIONS_PATH.exec(path)
  if (!impressions || method.toUpperCase() !== 'POST') return false
  return safeDecode(impressions[1] ?? '') === environmentId.toLowerCase()
}

const safeDecode = (segment: string) => {
  try {
    return decodeURIComponent(segment)
  } catch {
    return undefined
  }
}

async function sdkKeyAuth(runtime: ServiceRuntime, secret: string): Promise<AuthContext | undefined> {
  const hash = hashSecret(secret)
  const row = (await runtime
    .knex(SERVICE_TABLES.sdkKeys)
    .where('key_hash', hash)
    .first('id', 'key_hash', 'environment_id', 'project_id', 'kind')) as
    | { id: number | string; key_hash: string; environment_id: string; project_id: string; kind: SdkKeyKind }
    | undefined
  // The lookup is by hash, which an attacker cannot steer; the constant-time check is the final word.
  if (!row || !hashesEqual(row.key_hash, hash)) return undefined
  return {
    kind: 'sdk_key',
    sdkKey: { id: Number(row.id), environmentId: row.environment_id, projectId: row.project_id, kind: row.kind },
  }
}

async function tokenAuth(runtime: ServiceRuntime, secret: string): Promise<AuthContext | undefined> {
  const hash = hashSecret(secret)
  const row = (await runtime
    .knex({ t: SERVICE_TABLES.tokens })
    .join({ u: SERVICE_TABLES.users }, 'u.id', 't.user_id')
    .where('t.token_hash', hash)
    .first(
      't.id as token_id',
      't.token_hash',
      't.scope',
      't.expires_at',
      't.last_used_at',
      'u.id',
      'u.email',
      'u.name',
      'u.role',
    )) as
    | {
        token_id: number | string
        token_hash: string
        scope: TokenScope
        expires_at: number | string | null
        last_used_at: number | string | null
        id: number | string
        email: string
        name: string
        role: Role
      }
    | undefined
  if (!row || !hashesEqual(row.token_hash, hash)) return undefined
  const now = runtime.clock()
  if (row.expires_at !== null && Number(row.expires_at) <= now) {
    throw unauthorized('this personal access token has expired')
  }
  if (row.last_used_at === null || now - Number(row.last_used_at) >= LAST_USED_RESOLUTION_MS) {
    await runtime.knex(SERVICE_TABLES.tokens).where('id', row.token_id).update({ last_used_at: now })
  }
  return {
    kind: 'pat',
    user: { id: Number(row.id), email: row.email, name: row.name, role: row.role },
    tokenScope: row.scope,
    tokenId: Number(row.token_id),
  }
}
