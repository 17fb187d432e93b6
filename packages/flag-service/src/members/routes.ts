import { HttpError, parseOr422 } from '@flagsync/server-kit'
import { type Request, Router } from 'express'
import { projectOf, requireProjectRole } from '../auth/guards.js'
import { recordRevocation } from '../auth/revocations.js'
import { allowOnly, jsonBodyFor, noContent, type RouterOptions } from '../http.js'
import { intId } from '../schemas.js'
import type { ServiceRuntime } from '../service-runtime.js'
import { deleteMember, insertMember, listMembers, memberRow, updateMemberRole } from './queries.js'
import { memberJson } from './rows.js'
import { addMemberSchema, updateMemberSchema } from './schema.js'

const noMember = (raw: string) =>
  new HttpError('not_found', `user ${JSON.stringify(raw)} is not a member of this project`)

/** /api/projects/:project_id/members (after `loadProject`): members read, project admins manage. */
export function createMembersRouter(runtime: ServiceRuntime, options: RouterOptions = {}): Router {
  const router = Router({ mergeParams: true })
  const body = jsonBodyFor(options)
  const memberId = (req: Request) => {
    const raw = String(req.params.user_id)
    const id = intId(raw)
    if (id === undefined) throw noMember(raw)
    return { raw, id }
  }

  router.get('/', requireProjectRole('viewer'), async (req, res) => {
    res.json((await listMembers(runtime.knex, projectOf(req).id)).map(memberJson))
  })

  router.post('/', requireProjectRole('admin'), ...body, async (req, res) => {
    const input = parseOr422(addMemberSchema, req.body, 'member')
    const projectId = projectOf(req).id
    await runtime.write(
      (trx) => insertMember(trx, { projectId, userId: input.user_id, role: input.role, now: runtime.clock() }),
      undefined,
      req,
    )
    res.json(memberJson(await memberRow(runtime.knex, projectId, input.user_id)))
  })

  router.patch('/:user_id', requireProjectRole('admin'), ...body, async (req, res) => {
    const { raw, id } = memberId(req)
    const { role } = parseOr422(updateMemberSchema, req.body, 'member')
    const projectId = projectOf(req).id
    const updated = await runtime.write((trx) => updateMemberRole(trx, projectId, id, role), undefined, req)
    if (!updated) throw noMember(raw)
    res.json(memberJson(await memberRow(runtime.knex, projectId, id)))
  })

  router.delete('/:user_id', requireProjectRole('admin'), async (req, res) => {
    const { raw, id } = memberId(req)
    const projectId = projectOf(req).id
    await runtime.write(
      async (trx, flags) => {
        if (!(await deleteMember(trx, projectId, id))) throw noMember(raw)
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
