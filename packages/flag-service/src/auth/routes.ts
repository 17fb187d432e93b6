import { HttpError, parseOr422 } from '@flagsync/server-kit'
import { type Request, type Response, Router } from 'express'
import { allowOnly, jsonBodyFor, noContent, type RouterOptions } from '../http.js'
import type { ServiceRuntime } from '../service-runtime.js'
import { workspaceOf } from '../setup.js'
import { recordPeopleAudit } from '../users/audit.js'
import { recordPeopleEvent } from '../users/events.js'
import { setPassword, userByEmail, userById } from '../users/queries.js'
import { authenticate } from './authenticate.js'
import type { AuthUser } from './context.js'
import { userOf } from './guards.js'
import { lockoutState } from './lockout.js'
import { admitLoginAttempt, clearLoginFailures, pruneLoginFailures } from './login-attempts.js'
import { dummyPasswordHash, hashPassword, verifyPassword } from './passwords.js'
import { recordRevocation } from './revocations.js'
import { changePasswordSchema, loginSchema } from './schema.js'
import { clearedSessionCookie, createSession, deleteSession, sessionCookie, sessionCookieValue } from './sessions.js'

export interface AuthRouterOptions extends RouterOptions {
  /** `Secure` on the session cookie; 'auto' sets it when the request came over HTTPS. */
  cookieSecure?: boolean | 'auto'
}

const rateLimited = (seconds: number) =>
  new HttpError('rate_limited', `too many failed logins: try again in ${seconds} seconds`, {
    retry_after_seconds: seconds,
    retryAfterSeconds: seconds,
  })

/** The login response and GET /api/auth/me: the user plus the workspace. */
async function currentUser(runtime: ServiceRuntime, user: AuthUser) {
  const workspace = await workspaceOf(runtime)
  return {
    id: user.id,
    email: user.email,
    name: user.name,
    role: user.role,
    workspace_name: workspace?.name ?? '',
    is_setup_complete: workspace !== undefined,
  }
}

/** /api/auth: login (with lockout), logout, me, and the public workspace route. */
export function createAuthRouter(runtime: ServiceRuntime, options: AuthRouterOptions = {}): Router {
  const router = Router()
  const body = jsonBodyFor(options)
  const secure = (req: { secure: boolean }) =>
    options.cookieSecure === 'auto' || options.cookieSecure === undefined ? req.secure : options.cookieSecure

  router.get('/workspace', async (_req, res) => {
    const workspace = await workspaceOf(runtime)
    res.json({ workspace_name: workspace?.name ?? '', is_setup_complete: workspace !== undefined })
  })

  router.post('/login', ...body, async (req, res) => {
    const input = parseOr422(loginSchema, req.body, 'login')
    const email = input.email.trim().toLowerCase()
    // The attempt counts as a failure from here on, before the hash is checked (see admitLoginAttempt).
    const admission = await admitLoginAttempt(runtime, email)
    // While locked nothing is checked or recorded, so a correct password does not help and a wrong one does not extend.
    if (!admission.admitted) throw rateLimited(admission.retryAfterSeconds)

    const user = await userByEmail(runtime.knex, email)
    // An unknown email costs the same scrypt run and gets the same answer as a wrong password.
    const valid = await verifyPassword(input.password, user?.password_hash ?? (await dummyPasswordHash()))
    if (!user || !valid) {
      await pruneLoginFailures(runtime)
      const after = lockoutState([...admission.earlier, admission.at], admission.at)
      if (after.locked) throw rateLimited(after.retryAfterSeconds)
      throw new HttpError('unauthorized', 'wrong email or password', { attempts_remaining: after.attemptsRemaining })
    }
    await clearLoginFailures(runtime, email, admission.attemptId)
    const authUser: AuthUser = { id: Number(user.id), email: user.email, name: user.name, role: user.role }
    const sid = await createSession(runtime, authUser.id)
    res.setHeader('Set-Cookie', sessionCookie(sid, secure(req)))
    res.setHeader('Cache-Control', 'no-store')
    res.json(await currentUser(runtime, authUser))
  })

  router.post('/logout', authenticate(runtime), async (req, res) => {
    const sid = sessionCookieValue(req)
    if (sid !== undefined) await deleteSession(runtime, sid)
    res.setHeader('Set-Cookie', clearedSessionCookie(secure(req)))
    noContent(res)
  })

  router.post('/password', authenticate(runtime), ...body, (req, res) => changeOwnPassword(runtime, req, res))

  router.get('/me', authenticate(runtime), async (req, res) => {
    const user = req.auth?.user
    if (!user) throw new HttpError('unauthorized', 'no valid session: log in (or use a personal access token)')
    res.setHeader('Cache-Control', 'no-store')
    res.json(await currentUser(runtime, user))
  })

  allowOnly(router, '/workspace', 'GET')
  allowOnly(router, '/login', 'POST')
  allowOnly(router, '/logout', 'POST')
  allowOnly(router, '/me', 'GET')
  allowOnly(router, '/password', 'POST')
  return router
}

/**
 * POST /api/auth/password: a signed-in user (session only) changes their own password with the current one. A
 * wrong current password is a 403 and counts toward the login lockout (429 while locked), so a borrowed session
 * cannot guess it. Their other sessions end and their open streams close; this session and their personal access
 * tokens stay (tokens are revoked one by one, or all at once by an admin's password reset).
 */
async function changeOwnPassword(runtime: ServiceRuntime, req: Request, res: Response): Promise<void> {
  const user = userOf(req)
  const sessionHash = req.auth?.kind === 'session' ? req.auth.sessionHash : undefined
  if (sessionHash === undefined) {
    throw new HttpError('forbidden', 'changing your password needs a session (log in), not a personal access token')
  }
  const input = parseOr422(changePasswordSchema, req.body, 'password change')
  const admission = await admitLoginAttempt(runtime, user.email)
  if (!admission.admitted) throw rateLimited(admission.retryAfterSeconds)
  const stored = (await userById(runtime.knex, user.id))?.password_hash
  if (!stored || !(await verifyPassword(input.current_password, stored))) {
    await pruneLoginFailures(runtime)
    const after = lockoutState([...admission.earlier, admission.at], admission.at)
    if (after.locked) throw rateLimited(after.retryAfterSeconds)
    throw new HttpError('forbidden', 'current_password is wrong', { attempts_remaining: after.attemptsRemaining })
  }
  await clearLoginFailures(runtime, user.email, admission.attemptId)
  const passwordHash = await hashPassword(input.new_password)
  await runtime.write(
    async (trx, flags) => {
      // Checked again under the write lock: a reset that landed since the check wins.
      if ((await userById(trx, user.id))?.password_hash !== stored) {
        throw new HttpError('conflict', 'your password was changed while this request ran; nothing was changed')
      }
      const ended = await setPassword(trx, user.id, passwordHash, { keepSessionHash: sessionHash, revokeTokens: false })
      const now = runtime.clock()
      await recordPeopleAudit(trx, {
        at: now,
        actor: user.id,
        action: 'user.password_changed',
        targetUserId: user.id,
        details: { sessions_ended: ended.sessions },
      })
      recordPeopleEvent(flags, user.id, 'user.password_changed', now) // before the revocation: their streams hear why
      if (ended.sessions > 0) recordRevocation(flags, 'session', now)
    },
    undefined,
    req,
  )
  noContent(res)
}
