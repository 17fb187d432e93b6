import { HttpError, parseOr422 } from '@flagsync/server-kit'
import { type Request, Router } from 'express'
import { projectOf, requireProjectRole } from '../auth/guards.js'
import { recordRevocation } from '../auth/revocations.js'
import { type MemberRow, memberJson } from '../records.js'
import { allowOnly, jsonBodyFor, noContent, type RouterOptions } from '../routes/common.js'
import { addMemberSchema, intId, updateMemberSchema } from '../schemas.js'
import type { ServiceRuntime } from '../service-runtime.js'
import { SERVICE_TABLES } from '../tables.js'

const T = SERVICE_TABLES
const noMember = (raw: string) =>
  new HttpError('not_found', `user ${JSON.stringify(raw)} is not a member of this project`)

/** /api/projects/:project_id/members (after `loadProject`): members read, project admins manage. */
export function createMembersRouter(runtime: ServiceRuntime, options: RouterOptions = {}): Router {
  const router = Router({ mergeParams: true })
  const body = jsonBodyFor(options)
  const { knex } = runtime
  const members = (projectId: string) =>
    knex({ m: T.members })
      .join({ u: T.users }, 'u.id', 'm.user_id')
      .where('m.project_id', projectId)
      .select('m.user_id', 'u.name', 'u.email', 'm.role')
  const memberId = (req: Request) => {
    const raw = String(req.params.user_id)
    const id = intId(raw)
    if (id === undefined) throw noMember(raw)
    return { raw, id }
  }

  router.get('/', requireProjectRole('viewer'), async (req, res) => {
    const rows = (await members(projectOf(req).id).orderBy('m.user_id')) as MemberRow[]
    res.json(rows.map(memberJson))
  })

  router.post('/', requireProjectRole('admin'), ...body, async (req, res) => {
    const input = parseOr422(addMemberSchema, req.body, 'member')
    const projectId = projectOf(req).id
    await runtime.write(
      async (trx) => {
        if (!(await trx(T.users).where('id', input.user_id).first('id'))) {
          throw new HttpError('validation_failed', `invalid member: user_id: no user ${input.user_id}`, {
            issues: [{ path: 'user_id', message: `no user ${input.user_id}` }],
          })
        }
        if (await trx(T.members).where({ project_id: projectId, user_id: input.user_id }).first('user_id')) {
          throw new HttpError('conflict', `user ${input.user_id} is already a member of this project`)
        }
        await trx(T.members).insert({
          project_id: projectId,
          user_id: input.user_id,
          role: input.role,
          created_at: runtime.clock(),
        })
      },
      undefined,
      req,
    )
    res.json(memberJson((await members(projectId).where('m.user_id', input.user_id).first()) as MemberRow))
  })

  router.patch('/:user_id', requireProjectRole('admin'), ...body, async (req, res) => {
    const { raw, id } = memberId(req)
    const { role } = parseOr422(updateMemberSchema, req.body, 'member')
    const projectId = projectOf(req).id
    const updated = await runtime.write(
      (trx) => trx(T.members).where({ project_id: projectId, user_id: id }).update({ role }),
      undefined,
      req,
    )
    if (updated === 0) throw noMember(raw)
    res.json(memberJson((await members(projectId).where('m.user_id', id).first()) as MemberRow))
  })

  router.delete('/:user_id', requireProjectRole('admin'), async (req, res) => {
    const { raw, id } = memberId(req)
    const projectId = projectOf(req).id
    await runtime.write(
      async (trx, flags) => {
        const deleted = await trx(T.members).where({ project_id: projectId, user_id: id }).delete()
        if (deleted === 0) throw noMember(raw)
        recordRevocation(flags, `member:${projectId}:${id}`, runtime.clock()) // their streams of the project end now
      },
      undefined,
      req,
    )
    noContent(res)
  })

  allowOnly(router, '/', 'GET, POST')
  allowOnly(router, '/:user_id', 'PATCH, DELETE')
  return router
}
