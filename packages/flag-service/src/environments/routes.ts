import { randomUUID } from 'node:crypto'
import { HttpError, parseOr422 } from '@flagsync/server-kit'
import { type Request, type Response, Router } from 'express'
import type { Knex } from 'knex'
import { projectOf, requireProjectRole } from '../auth/guards.js'
import { auditOf } from '../flags/flag-audit.js'
import { deleteEnvironmentFlags } from '../projects/queries.js'
import { type EnvironmentRow, environmentJson } from '../records.js'
import { allowOnly, jsonBodyFor, noContent, type RouterOptions } from '../routes/common.js'
import {
  createEnvironmentSchema,
  DEFAULT_ENVIRONMENT_COLOR,
  reorderEnvironmentsSchema,
  requireApprovalSchema,
  UUID_PATTERN,
  updateEnvironmentSchema,
} from '../schemas.js'
import type { ServiceRuntime } from '../service-runtime.js'
import { slugify } from '../slug.js'
import { SERVICE_TABLES } from '../tables.js'
import { reorderEnvironments } from './order.js'

const T = SERVICE_TABLES
const ENV_COLUMNS = ['id', 'project_id', 'name', 'slug', 'color', 'is_default', 'require_approval', 'created_at']
const noEnvironment = (raw: string) =>
  new HttpError('not_found', `no environment ${JSON.stringify(raw)} in this project`)
const unprocessable = (message: string) => new HttpError('validation_failed', message)

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

async function find(knex: Knex, projectId: string, id: string): Promise<EnvironmentRow> {
  const row = (await knex(T.environments).where({ project_id: projectId, id }).first(ENV_COLUMNS)) as
    | EnvironmentRow
    | undefined
  if (!row) throw noEnvironment(id)
  return row
}

const list = async (knex: Knex, projectId: string) =>
  (await knex(T.environments)
    .where('project_id', projectId)
    .select(ENV_COLUMNS)
    .orderBy('position')) as EnvironmentRow[]

function reorder(runtime: ServiceRuntime): EnvironmentHandler {
  return async (req, res) => {
    const input = parseOr422(reorderEnvironmentsSchema, req.body, 'environment order')
    const projectId = projectOf(req).id
    await runtime.write(
      async (trx, flags) => {
        if (!(await trx(T.projects).where('id', projectId).first('id')))
          throw new HttpError('not_found', 'no such project')
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
    await runtime.write(
      async (trx) => {
        if (!(await trx(T.projects).where('id', projectId).first('id')))
          throw new HttpError('not_found', 'no such project')
        if (await trx(T.environments).where({ project_id: projectId, slug }).first('id')) {
          throw new HttpError('conflict', `an environment with the slug ${JSON.stringify(slug)} exists in this project`)
        }
        const last = await trx(T.environments).where('project_id', projectId).max({ p: 'position' }).first()
        await trx(T.environments).insert({ ...row, position: Number(last?.p ?? 0) + 1 })
      },
      undefined,
      req,
    )
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
    await runtime.write(
      async (trx) => {
        if (Object.keys(changes).length > 0)
          await trx(T.environments).where({ project_id: projectId, id }).update(changes)
      },
      undefined,
      req,
    )
    res.json(environmentJson(await find(runtime.knex, projectId, id)))
  }
}

function deleteEnvironment(runtime: ServiceRuntime): EnvironmentHandler {
  return async (req, res) => {
    const id = envId(req)
    const projectId = projectOf(req).id
    await runtime.write(
      async (trx, flags) => {
        const env = (await trx(T.environments).where({ project_id: projectId, id }).first('is_default')) as
          | { is_default: boolean | number }
          | undefined
        if (!env) throw noEnvironment(id)
        const count = await trx(T.environments).where('project_id', projectId).count({ n: '*' }).first()
        if (Number(count?.n ?? 0) <= 1) throw unprocessable('cannot delete the last environment of a project')
        if (env.is_default)
          throw unprocessable('cannot delete the default environment: make another one the default first')
        const keys = await trx(T.sdkKeys)
          .where('project_id', projectId)
          .andWhere('kind', 'server')
          .whereNot('environment_id', id)
          .count({ n: '*' })
          .first()
        if (Number(keys?.n ?? 0) === 0) {
          throw unprocessable(
            "cannot delete the environment holding the project's last server keys: create a server key in another environment first",
          )
        }
        await deleteEnvironmentFlags(flags, [id])
        // Its SDK keys (and whatever later tables reference it) cascade.
        await trx(T.environments).where({ project_id: projectId, id }).delete()
      },
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
    await runtime.write(
      async (trx) => {
        if (!(await trx(T.environments).where({ project_id: projectId, id }).first('id'))) throw noEnvironment(id)
        await trx(T.environments).where('project_id', projectId).whereNot('id', id).update({ is_default: false })
        await trx(T.environments).where({ project_id: projectId, id }).update({ is_default: true })
      },
      undefined,
      req,
    )
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
      (trx) =>
        trx(T.environments).where({ project_id: projectId, id }).update({ require_approval: input.require_approval }),
      undefined,
      req,
    )
    res.json(environmentJson(await find(runtime.knex, projectId, id)))
  }
}
