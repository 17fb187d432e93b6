import { HttpError, parseOr422 } from '@flagsync/server-kit'
import { Router } from 'express'
import {
  authOf,
  loadProject,
  projectOf,
  requireAuth,
  requireProjectRole,
  requireWorkspaceAdmin,
} from '../auth/guards.js'
import { createEnvironmentsRouter } from '../environments/routes.js'
import { segmentScope } from '../flags/expand.js'
import { auditOf } from '../flags/flag-audit.js'
import { createMembersRouter } from '../members/routes.js'
import { type ProjectRow, projectJson, sdkKeyJson } from '../records.js'
import { allowOnly, jsonBodyFor, noContent, type RouterOptions } from '../routes/common.js'
import { projectNameSchema } from '../schemas.js'
import { createSdkKeysRouter } from '../sdk-keys/routes.js'
import type { ServiceRuntime } from '../service-runtime.js'
import { SERVICE_TABLES } from '../tables.js'
import {
  assertSlugFree,
  createProject,
  deleteEnvironmentFlags,
  projectRow,
  projectSlug,
  projectsQuery,
} from './queries.js'

const T = SERVICE_TABLES

/**
 * /api/projects and everything under a project (members, environments, SDK
 * keys). `loadProject` resolves `:project_id` once for the nested routers.
 */
export function createProjectsRouter(runtime: ServiceRuntime, options: RouterOptions = {}): Router {
  const router = Router()
  const body = jsonBodyFor(options)
  const { knex } = runtime
  const project = loadProject(runtime)

  router.get('/', requireAuth, async (req, res) => {
    const auth = authOf(req)
    const query = projectsQuery(knex)
    if (auth.kind === 'sdk_key') query.where('p.id', auth.sdkKey?.projectId ?? '')
    else if (auth.user?.role !== 'admin') {
      query.whereIn(
        'p.id',
        knex(T.members)
          .select('project_id')
          .where('user_id', auth.user?.id ?? 0),
      )
    }
    res.json(((await query) as ProjectRow[]).map(projectJson))
  })

  // The response carries the seeded Production SDK key with its full value: the only time anyone sees it.
  router.post('/', requireWorkspaceAdmin, ...body, async (req, res) => {
    const { name } = parseOr422(projectNameSchema, req.body, 'project')
    const created = await runtime.write((trx) => createProject(trx, name, runtime.clock()), undefined, req)
    res.json({
      ...projectJson(created.project),
      sdk_key: { ...sdkKeyJson(created.sdkKey.row), key: created.sdkKey.key },
    })
  })

  router.get('/:project_id', requireAuth, project, async (req, res) => {
    const row = await projectRow(knex, projectOf(req).id)
    if (!row) throw new HttpError('not_found', 'the project was just deleted')
    res.json(projectJson(row))
  })

  router.patch('/:project_id', requireAuth, project, requireProjectRole('admin'), ...body, async (req, res) => {
    const { name } = parseOr422(projectNameSchema, req.body, 'project')
    const id = projectOf(req).id
    const slug = projectSlug(name)
    await runtime.write(
      async (trx) => {
        await assertSlugFree(trx, slug, id)
        const updated = await trx(T.projects).where('id', id).update({ name, slug })
        if (updated === 0) throw new HttpError('not_found', 'the project was just deleted')
      },
      undefined,
      req,
    )
    res.json(projectJson((await projectRow(knex, id)) as ProjectRow))
  })

  router.delete('/:project_id', requireWorkspaceAdmin, project, async (req, res) => {
    const id = projectOf(req).id
    await runtime.write(
      async (trx, flags) => {
        const total = await trx(T.projects).count({ n: '*' }).first()
        if (!(await trx(T.projects).where('id', id).first('id'))) throw new HttpError('not_found', 'no such project')
        if (Number(total?.n ?? 0) <= 1) {
          throw new HttpError('validation_failed', 'cannot delete the last project: a workspace keeps at least one')
        }
        const environmentIds = (await trx(T.environments).where('project_id', id).pluck('id')) as string[]
        // Its environments' flags and its segments go through the change log, so every stream hears of it.
        await deleteEnvironmentFlags(flags, [...environmentIds, segmentScope(id)])
        // Environments, members and SDK keys (and whatever later tables reference them) cascade.
        await trx(T.projects).where('id', id).delete()
      },
      await auditOf(knex, req),
      req,
    )
    noContent(res)
  })

  router.use('/:project_id/members', requireAuth, project, createMembersRouter(runtime, options))
  router.use('/:project_id/environments', requireAuth, project, createEnvironmentsRouter(runtime, options))
  router.use('/:project_id/keys', requireAuth, project, createSdkKeysRouter(runtime, options))

  allowOnly(router, '/', 'GET, POST')
  allowOnly(router, '/:project_id', 'GET, PATCH, DELETE')
  return router
}
