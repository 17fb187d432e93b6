import { HttpError, parseOr422 } from '@flagsync/server-kit'
import { Router } from 'express'
import { requireUser, requireWorkspaceAdmin, userOf } from '../auth/guards.js'
import { hashPassword } from '../auth/passwords.js'
import { recordRevocation } from '../auth/revocations.js'
import { allowOnly, jsonBodyFor, noContent, type RouterOptions } from '../http.js'
import { intId } from '../schemas.js'
import type { ServiceRuntime } from '../service-runtime.js'
import { adminCount, deleteUser, insertUser, listUsers, userRole } from './queries.js'
import { userJson } from './rows.js'
import { createUserSchema } from './schema.js'

const noUser = (raw: string) => new HttpError('not_found', `no user ${JSON.stringify(raw)}`)

/** /api/users: every user may list; workspace admins create and delete. */
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
      (trx) => insertUser(trx, { email, name: input.name, role: input.role, passwordHash, now: runtime.clock() }),
      undefined,
      req,
    )
    res.json(userJson(row))
  })

  router.delete('/:id', requireWorkspaceAdmin, async (req, res) => {
    const caller = userOf(req)
    const raw = String(req.params.id)
    const id = intId(raw)
    if (id === undefined) throw noUser(raw)
    await runtime.write(
      async (trx, flags) => {
        const role = await userRole(trx, id)
        if (role === undefined) throw noUser(raw)
        if (role === 'admin') {
          if ((await adminCount(trx)) <= 1) {
            throw new HttpError('validation_failed', 'cannot delete the last admin: make another user admin first')
          }
        }
        if (id === caller.id) throw new HttpError('validation_failed', 'you cannot delete yourself')
        await deleteUser(trx, id)
        recordRevocation(flags, `user:${id}`, runtime.clock()) // their open streams end now
      },
      undefined,
      req,
    )
    noContent(res)
  })

  allowOnly(router, '/', 'GET, POST')
  allowOnly(router, '/:id', 'DELETE')
  return router
}
