import { HttpError, parseOr422 } from '@flagsync/server-kit'
import { Router } from 'express'
import { auditOf } from '../audit/flag-audit.js'
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
import { metaScope } from '../flags/meta.js'
import { allowOnly, jsonBodyFor, noContent, type RouterOptions } from '../http.js'
import { createMembersRouter } from '../members/routes.js'
import { createSdkKeysRouter } from '../sdk-keys/routes.js'
import { sdkKeyJson } from '../sdk-keys/rows.js'
import type { ServiceRuntime } from '../service-runtime.js'
import {
  createProject,
  deleteProject,
  listProjects,
  type ProjectVisibility,
  projectRow,
  projectSlug,
  renameProject,
} from './queries.js'
import { type ProjectRow, projectJson } from './rows.js'
import { projectNameSchema } from './schema.js'

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
    const visibility: ProjectVisibility =
      auth.kind === 'sdk_key'
        ? { projectId: auth.sdkKey?.projectId ?? '' }
        : auth.user?.role === 'admin'
          ? 'all'
          : { memberOf: auth.user?.id ?? 0 }
    res.json((await listProjects(knex, visibility)).map(projectJson))
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
        if (!(await renameProject(trx, id, name, slug)))
          throw new HttpError('not_found', 'the project was just deleted')
      },
      undefined,
      req,
    )
    res.json(projectJson((await projectRow(knex, id)) as ProjectRow))
  })

  router.delete('/:project_id', requireWorkspaceAdmin, project, async (req, res) => {
    const id = projectOf(req).id
    await runtime.write(
      (_trx, flags) => deleteProject(flags, id, [segmentScope(id), metaScope(id)]),
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
