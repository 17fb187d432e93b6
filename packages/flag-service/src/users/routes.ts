import { auditQueryOf, HttpError, parseOr422 } from '@flagsync/server-kit'
import { type Request, type Response, Router } from 'express'
import { requireUser, requireWorkspaceAdmin, userOf } from '../auth/guards.js'
import { forgetLoginFailures } from '../auth/login-attempts.js'
import { hashPassword } from '../auth/passwords.js'
import { recordRevocation } from '../auth/revocations.js'
import { allowOnly, jsonBodyFor, noContent, type RouterOptions } from '../http.js'
import { intId } from '../schemas.js'
import type { ServiceRuntime } from '../service-runtime.js'
import { peopleAuditPage, recordPeopleAudit } from './audit.js'
import { recordPeopleEvent, recordPersonAudit } from './events.js'
import { deleteUser, insertUser, isLastAdmin, listUsers, setPassword, updateUser, userById } from './queries.js'
import { userJson } from './rows.js'
import { createUserSchema, resetPasswordSchema, updateUserSchema } from './schema.js'

const noUser = (raw: string) => new HttpError('not_found', `no user ${JSON.stringify(raw)}`)

/** The `:id` of a request as a user id, or a 404 naming it. */
function targetId(req: Request): { id: number; raw: string } {
  const raw = String(req.params.id)
  const id = intId(raw)
  if (id === undefined) throw noUser(raw)
  return { id, raw }
}

/** /api/users: every user may list; workspace admins create, change, reset passwords, delete and read the audit. */
export function createUsersRouter(runtime: ServiceRuntime, options: RouterOptions = {}): Router {
  const router = Router()
  const body = jsonBodyFor(options)

  router.get('/', requireUser, async (_req, res) => {
    res.json((await listUsers(runtime.knex)).map(userJson))
  })

  router.post('/', requireWorkspaceAdmin, ...body, async (req, res) => {
    const input = parseOr422(createUserSchema, req.body, 'user')
    const email = input.email.toLowerCase()
    const passwordHash = await hashPassword(input.password)
    const row = await runtime.write(
      async (trx, flags) => {
        const now = runtime.clock()
        const user = await insertUser(trx, { email, name: input.name, role: input.role, passwordHash, now })
        await recordPersonAudit(trx, flags, { at: now, actor: userOf(req).id, action: 'user.created', user })
        return user
      },
      undefined,
      req,
    )
    res.json(userJson(row))
  })

  router.get('/audit', requireWorkspaceAdmin, async (req, res) => {
    const page = await peopleAuditPage(runtime.knex, auditQueryOf(req.query))
    res.setHeader('Cache-Control', 'no-store')
    res.json(page)
  })
  // Before the `/:id` routes, so another method on /audit is a 405, not a PATCH or DELETE of a user "audit".
  allowOnly(router, '/audit', 'GET')

  router.patch('/:id', requireWorkspaceAdmin, ...body, (req, res) => patchUser(runtime, req, res))
  router.post('/:id/password', requireWorkspaceAdmin, ...body, (req, res) => resetPassword(runtime, req, res))

  router.delete('/:id', requireWorkspaceAdmin, (req, res) => removeUser(runtime, req, res))

  allowOnly(router, '/', 'GET, POST')
  allowOnly(router, '/:id', 'PATCH, DELETE')
  allowOnly(router, '/:id/password', 'POST')
  return router
}

/** PATCH /api/users/:id: role and/or name; demoting the last admin is a 409, decided under the write lock. */
async function patchUser(runtime: ServiceRuntime, req: Request, res: Response): Promise<void> {
  const caller = userOf(req)
  const { id, raw } = targetId(req)
  const input = parseOr422(updateUserSchema, req.body, 'user')
  const row = await runtime.write(
    async (trx, flags) => {
      const user = await userById(trx, id)
      if (!user) throw noUser(raw)
      if (input.role !== undefined && input.role !== 'admin' && (await isLastAdmin(trx, user.role))) {
        throw new HttpError('conflict', 'cannot demote the last admin: make another user admin first')
      }
      const details: Record<string, { from: string; to: string }> = {}
      if (input.role !== undefined && input.role !== user.role) details.role = { from: user.role, to: input.role }
      if (input.name !== undefined && input.name !== user.name) details.name = { from: user.name, to: input.name }
      if (Object.keys(details).length === 0) return user
      await updateUser(trx, id, {
        ...(details.role && { role: input.role }),
        ...(details.name && { name: input.name }),
      })
      const now = runtime.clock()
      await recordPeopleAudit(trx, { at: now, actor: caller.id, action: 'user.updated', targetUserId: id, details })
      recordPeopleEvent(flags, id, 'user.updated', now)
      // A lower role may hide projects from their open streams: those re-check their access now.
      if (details.role) recordRevocation(flags, `user:${id}`, now)
      return { ...user, role: input.role ?? user.role, name: input.name ?? user.name }
    },
    undefined,
    req,
  )
  res.json(userJson(row))
}

/**
 * POST /api/users/:id/password: an admin sets another user's password. Every session and personal access token of
 * that user ends in the same transaction, their open streams close, and a login lockout of theirs ends (the usual
 * reason for a reset is a person who cannot sign in).
 */
async function resetPassword(runtime: ServiceRuntime, req: Request, res: Response): Promise<void> {
  const caller = userOf(req)
  const { id, raw } = targetId(req)
  // Your own needs the current one: a borrowed session must not set a new password, nor end every session, unasked.
  if (id === caller.id) {
    throw new HttpError(
      'validation_failed',
      'you cannot reset your own password: change it with your current one (POST /api/auth/password)',
    )
  }
  const input = parseOr422(resetPasswordSchema, req.body, 'password reset')
  const passwordHash = await hashPassword(input.password)
  await runtime.write(
    async (trx, flags) => {
      const user = await userById(trx, id)
      if (!user) throw noUser(raw)
      const ended = await setPassword(trx, id, passwordHash, { revokeTokens: true })
      await forgetLoginFailures(trx, user.email)
      const now = runtime.clock()
      await recordPeopleAudit(trx, {
        at: now,
        actor: caller.id,
        action: 'user.password_reset',
        targetUserId: id,
        details: { sessions_ended: ended.sessions, tokens_revoked: ended.tokens },
      })
      recordPeopleEvent(flags, id, 'user.password_reset', now) // before the revocation: their streams hear why
      recordRevocation(flags, `user:${id}`, now)
    },
    undefined,
    req,
  )
  noContent(res)
}

/**
 * DELETE /api/users/:id: checks 404, then the last admin (409), then yourself (422); their sessions, tokens and
 * memberships cascade, and their open streams end.
 */
async function removeUser(runtime: ServiceRuntime, req: Request, res: Response): Promise<void> {
  const caller = userOf(req)
  const { id, raw } = targetId(req)
  await runtime.write(
    async (trx, flags) => {
      const user = await userById(trx, id)
      if (!user) throw noUser(raw)
      // The request is valid; the workspace's state refuses it, as for demoting the last admin.
      if (await isLastAdmin(trx, user.role)) {
        throw new HttpError('conflict', 'cannot delete the last admin: make another user admin first')
      }
      if (id === caller.id) throw new HttpError('validation_failed', 'you cannot delete yourself')
      await deleteUser(trx, id)
      const now = runtime.clock()
      await recordPersonAudit(trx, flags, { at: now, actor: caller.id, action: 'user.deleted', user })
      recordRevocation(flags, `user:${id}`, now) // their open streams end now
    },
    undefined,
    req,
  )
  noContent(res)
}
