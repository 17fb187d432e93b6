import { bearerToken, HttpError } from '@flagsync/server-kit'
import type { RequestHandler } from 'express'
import type { ServiceRuntime } from '../service-runtime.js'
import { SERVICE_TABLES } from '../tables.js'
import type { AuthContext, Role, TokenScope } from './context.js'
import { hashesEqual, hashSecret, PAT_PREFIX, SDK_KEY_PREFIX } from './secrets.js'
import { sessionCookieValue, sessionUser } from './sessions.js'

/** `last_used_at` is written at most once a minute per token, so reads do not each cost a write. */
export const LAST_USED_RESOLUTION_MS = 60_000

export const CSRF_HEADER = 'x-service-request'
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS'])

/** Whether a method changes state (CSRF and read_only tokens apply to these). */
export const isStateChange = (method: string) => !SAFE_METHODS.has(method.toUpperCase())

const unauthorized = (message: string) => new HttpError('unauthorized', message)

/**
 * Sets `req.auth` from `Authorization: Bearer sk_live_…` (SDK key),
 * `Authorization: Bearer pat_…` (personal access token) or the session cookie.
 * An Authorization header that does not authenticate is a 401 (it never falls
 * back to the cookie); a missing, expired or unknown cookie simply leaves
 * `req.auth` unset, and guards answer 401 where a caller is needed.
 *
 * Two rules hold for every state-changing request (POST, PATCH, PUT, DELETE),
 * so no route can forget them:
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
      if (secret.startsWith(SDK_KEY_PREFIX)) auth = await sdkKeyAuth(runtime, secret)
      else if (secret.startsWith(PAT_PREFIX)) auth = await tokenAuth(runtime, secret)
      if (!auth) throw unauthorized('invalid credentials')
      res.removeHeader('WWW-Authenticate')
    } else {
      const sid = sessionCookieValue(req)
      const user = sid === undefined ? undefined : await sessionUser(runtime, sid)
      if (user && sid !== undefined) auth = { kind: 'session', user, sessionHash: hashSecret(sid) }
    }
    req.auth = auth
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

async function sdkKeyAuth(runtime: ServiceRuntime, secret: string): Promise<AuthContext | undefined> {
  const hash = hashSecret(secret)
  const row = (await runtime
    .knex(SERVICE_TABLES.sdkKeys)
    .where('key_hash', hash)
    .first('id', 'key_hash', 'environment_id', 'project_id')) as
    | { id: number | string; key_hash: string; environment_id: string; project_id: string }
    | undefined
  // The lookup is by hash, which an attacker cannot steer; the constant-time check is the final word.
  if (!row || !hashesEqual(row.key_hash, hash)) return undefined
  return {
    kind: 'sdk_key',
    sdkKey: { id: Number(row.id), environmentId: row.environment_id, projectId: row.project_id },
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
