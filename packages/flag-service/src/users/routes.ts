import { HttpError, parseOr422 } from '@flagsync/server-kit'
import { Router } from 'express'
import { requireUser, requireWorkspaceAdmin, userOf } from '../auth/guards.js'
import { hashPassword } from '../auth/passwords.js'
import { recordRevocation } from '../auth/revocations.js'
import { type UserRow, userJson } from '../records.js'
import { allowOnly, jsonBodyFor, noContent, type RouterOptions } from '../routes/common.js'
import { createUserSchema, intId } from '../schemas.js'
import type { ServiceRuntime } from '../service-runtime.js'
import { SERVICE_TABLES } from '../tables.js'

const T = SERVICE_TABLES
const USER_COLUMNS = ['id', 'email', 'name', 'role', 'created_at'] as const
const noUser = (raw: string) => new HttpError('not_found', `no user ${JSON.stringify(raw)}`)

/** /api/users: every user may list; workspace admins create and delete. */
export function createUsersRouter(runtime: ServiceRuntime, options: RouterOptions = {}): Router {
  const router = Router()
  const body = jsonBodyFor(options)
  const { knex } = runtime

  router.get('/', requireUser, async (_req, res) => {
    const rows = (await knex(T.users).select(USER_COLUMNS).orderBy('id')) as UserRow[]
    res.json(rows.map(userJson))
  })

  router.post('/', requireWorkspaceAdmin, ...body, async (req, res) => {
    const input = parseOr422(createUserSchema, req.body, 'user')
    const email = input.email.toLowerCase()
    const passwordHash = await hashPassword(input.password)
    const row = await runtime.write(
      async (trx) => {
        if (await trx(T.users).where('email', email).first('id')) {
          throw new HttpError('conflict', `the email ${JSON.stringify(email)} is in use`)
        }
        const now = runtime.clock()
        const record = { email, name: input.name, role: input.role, password_hash: passwordHash, created_at: now }
        const [inserted] = (await trx(T.users).insert(record, ['id'])) as Array<{ id: number | string }>
        return { ...record, id: Number(inserted?.id) }
      },
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
        const target = (await trx(T.users).where('id', id).first('id', 'role')) as { role: string } | undefined
        if (!target) throw noUser(raw)
        if (target.role === 'admin') {
          const admins = await trx(T.users).where('role', 'admin').count({ n: '*' }).first()
          if (Number(admins?.n ?? 0) <= 1) {
            throw new HttpError('validation_failed', 'cannot delete the last admin: make another user admin first')
          }
        }
        if (id === caller.id) throw new HttpError('validation_failed', 'you cannot delete yourself')
        // Sessions, tokens and project memberships go with the user (ON DELETE CASCADE).
        await trx(T.users).where('id', id).delete()
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
