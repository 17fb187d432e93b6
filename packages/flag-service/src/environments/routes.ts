import { randomUUID } from 'node:crypto'
import { HttpError, parseOr422 } from '@flagsync/server-kit'
import { type Request, type Response, Router } from 'express'
import { auditOf } from '../audit/flag-audit.js'
import { projectOf, requireProjectRole } from '../auth/guards.js'
import { allowOnly, jsonBodyFor, noContent, type RouterOptions } from '../http.js'
import { UUID_PATTERN } from '../schemas.js'
import type { ServiceRuntime } from '../service-runtime.js'
import { slugify } from '../slug.js'
import { reorderEnvironments } from './order.js'
import {
  assertProjectExists,
  deleteEnvironment as deleteEnvironmentRow,
  findEnvironment as find,
  insertEnvironment,
  listEnvironments as list,
  makeDefaultEnvironment,
  noEnvironment,
  updateEnvironment as updateEnvironmentRow,
} from './queries.js'
import { type EnvironmentRow, environmentJson } from './rows.js'
import {
  createEnvironmentSchema,
  DEFAULT_ENVIRONMENT_COLOR,
  reorderEnvironmentsSchema,
  requireApprovalSchema,
  updateEnvironmentSchema,
} from './schema.js'

/** A slug from the name when none is given, by the projects' rule; a name that leaves nothing is a 422. */
function environmentSlug(name: string): string {
  const slug = slugify(name)
  if (slug === '') {
    const message = 'must contain at least one letter or digit (a-z, 0-9) to derive a slug, or send a slug'
    throw new HttpError('validation_failed', `invalid environment: name: ${message}`, {
      issues: [{ path: 'name', message }],
    })
  }
  return slug
}

/** /api/projects/:project_id/environments (after `loadProject`): members read, project admins manage. */
export function createEnvironmentsRouter(runtime: ServiceRuntime, options: RouterOptions = {}): Router {
  const router = Router({ mergeParams: true })
  const body = jsonBodyFor(options)
  router.get('/', requireProjectRole('viewer'), async (req, res) => {
    res.json((await list(runtime.knex, projectOf(req).id)).map(environmentJson))
  })
  // Before '/:env_id', whose 405 would otherwise answer PUT /order.
  router.put('/order', requireProjectRole('admin'), ...body, reorder(runtime))
  // Before the /:env_id routes, which would take `order` for an environment id (a PATCH was a 404).
  allowOnly(router, '/order', 'PUT')
  router.post('/', requireProjectRole('admin'), ...body, createEnvironment(runtime))
  router.patch('/:env_id', requireProjectRole('admin'), ...body, updateEnvironment(runtime))
  router.delete('/:env_id', requireProjectRole('admin'), deleteEnvironment(runtime))
  router.post('/:env_id/default', requireProjectRole('admin'), makeDefault(runtime))
  router.post('/:env_id/require-approval', requireProjectRole('admin'), ...body, setRequireApproval(runtime))
  allowOnly(router, '/', 'GET, POST')
  allowOnly(router, '/:env_id', 'PATCH, DELETE')
  allowOnly(router, '/:env_id/default', 'POST')
  allowOnly(router, '/:env_id/require-approval', 'POST')
  return router
}

type EnvironmentHandler = (req: Request, res: Response) => Promise<void>

function envId(req: Request): string {
  const raw = String(req.params.env_id)
  if (!UUID_PATTERN.test(raw)) throw noEnvironment(raw)
  return raw
}

function reorder(runtime: ServiceRuntime): EnvironmentHandler {
  return async (req, res) => {
    const input = parseOr422(reorderEnvironmentsSchema, req.body, 'environment order')
    const projectId = projectOf(req).id
    await runtime.write(
      async (trx, flags) => {
        await assertProjectExists(trx, projectId)
        await reorderEnvironments(trx, flags, projectId, input.environment_ids)
      },
      await auditOf(runtime.knex, req),
      req,
    )
    res.json((await list(runtime.knex, projectId)).map(environmentJson))
  }
}

function createEnvironment(runtime: ServiceRuntime): EnvironmentHandler {
  return async (req, res) => {
    const input = parseOr422(createEnvironmentSchema, req.body, 'environment')
    const projectId = projectOf(req).id
    const slug = input.slug ?? environmentSlug(input.name)
    const row: EnvironmentRow = {
      id: randomUUID(),
      project_id: projectId,
      name: input.name,
      slug,
      color: input.color ?? DEFAULT_ENVIRONMENT_COLOR,
      is_default: false,
      require_approval: false,
      created_at: runtime.clock(),
    }
    await runtime.write((trx) => insertEnvironment(trx, row), undefined, req)
    res.json(environmentJson(row))
  }
}

function updateEnvironment(runtime: ServiceRuntime): EnvironmentHandler {
  return async (req, res) => {
    const id = envId(req)
    const input = parseOr422(updateEnvironmentSchema, req.body, 'environment')
    const projectId = projectOf(req).id
    await find(runtime.knex, projectId, id)
    const changes: Partial<EnvironmentRow> = {}
    if (input.name !== undefined) changes.name = input.name
    if (input.color !== undefined) changes.color = input.color
    // In a write, like every other change: it serializes with revocations (see verifyAccess).
    await runtime.write((trx) => updateEnvironmentRow(trx, projectId, id, changes), undefined, req)
    res.json(environmentJson(await find(runtime.knex, projectId, id)))
  }
}

function deleteEnvironment(runtime: ServiceRuntime): EnvironmentHandler {
  return async (req, res) => {
    const id = envId(req)
    const projectId = projectOf(req).id
    await runtime.write(
      (_trx, flags) => deleteEnvironmentRow(flags, projectId, id),
      await auditOf(runtime.knex, req),
      req,
    )
    noContent(res)
  }
}

function makeDefault(runtime: ServiceRuntime): EnvironmentHandler {
  return async (req, res) => {
    const id = envId(req)
    const projectId = projectOf(req).id
    await runtime.write((trx) => makeDefaultEnvironment(trx, projectId, id), undefined, req)
    res.json(environmentJson(await find(runtime.knex, projectId, id)))
  }
}

function setRequireApproval(runtime: ServiceRuntime): EnvironmentHandler {
  return async (req, res) => {
    const id = envId(req)
    const input = parseOr422(requireApprovalSchema, req.body, 'require-approval setting')
    const projectId = projectOf(req).id
    await find(runtime.knex, projectId, id)
    await runtime.write(
      (trx) => updateEnvironmentRow(trx, projectId, id, { require_approval: input.require_approval }),
      undefined,
      req,
    )
    res.json(environmentJson(await find(runtime.knex, projectId, id)))
  }
}
