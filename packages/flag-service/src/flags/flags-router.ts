import { flagKeySchema } from '@flagsync/protocol'
import { HttpError, parseOr422 } from '@flagsync/server-kit'
import { TABLES } from '@flagsync/store'
import { type Request, Router } from 'express'
import type { Knex } from 'knex'
import type { EnvironmentAccess } from '../auth/context.js'
import { roleAtLeast } from '../auth/context.js'
import { authOf, environmentOf, requireProjectRole } from '../auth/guards.js'
import { allowOnly, jsonBodyFor, noContent, type RouterOptions } from '../routes/common.js'
import { UUID_PATTERN } from '../schemas.js'
import type { ServiceRuntime } from '../service-runtime.js'
import { actorOf, changeRequestJson, fileChangeRequest } from './change-requests.js'
import { assertFitsEnvironment, assertNoDependents } from './checks.js'
import { flagBodySchema, flagPatchSchema, mergeFlag, promoteSchema, type ServiceFlag } from './model.js'

const noFlag = (key: string) => new HttpError('not_found', `no flag ${JSON.stringify(key)} in this environment`)

/** The `:key` of the path; a key outside the key alphabet cannot exist, so it is a 404 without a query. */
function keyOf(req: Request): string {
  const key = String(req.params.key)
  if (!flagKeySchema.safeParse(key).success) throw noFlag(key)
  return key
}

async function requiresApproval(trx: Knex, environmentId: string): Promise<boolean> {
  const row = (await trx('flagsync_environments').where('id', environmentId).first('require_approval')) as
    | { require_approval: boolean | number }
    | undefined
  return Boolean(row?.require_approval)
}

/**
 * In an environment that requires approval, a PATCH becomes a change request.
 * The other ways of changing an existing flag there (replacing it with POST,
 * deleting it, promoting into it) would bypass the review, so they are left to
 * project admins (and SDK keys, which are admin-equivalent): the people who
 * could switch approval off anyway. Creating a new flag stays open to editors.
 */
function assertMayBypassApproval(env: Pick<EnvironmentAccess, 'name' | 'role'>, what: string): void {
  if (!roleAtLeast(env.role, 'admin')) {
    throw new HttpError(
      'forbidden',
      `${env.name} requires approval: ${what} needs the project admin role; send a PATCH to file a change request`,
    )
  }
}

/**
 * /api/environments/:env_id/flags (after `loadEnvironment`): viewers read
 * (segment references unexpanded), editors write. Every write validates the
 * flag against its environment in the write transaction.
 */
export function createEnvironmentFlagsRouter(runtime: ServiceRuntime, options: RouterOptions = {}): Router {
  const router = Router({ mergeParams: true })
  const body = jsonBodyFor(options)
  const { knex } = runtime

  // Straight from the database (not an instance's live set), so a read after a write on another instance sees it.
  router.get('/', requireProjectRole('viewer'), async (req, res) => {
    const rows = (await knex(TABLES.flags)
      .where('scope', environmentOf(req).id)
      .orderBy('key')
      .select('data')) as Array<{ data: string }>
    res.type('application/json').send(`[${rows.map((r) => r.data).join(',')}]`)
  })

  router.get('/:key', requireProjectRole('viewer'), async (req, res) => {
    const key = keyOf(req)
    const row = (await knex(TABLES.flags)
      .where({ scope: environmentOf(req).id, key })
      .first('data')) as { data: string } | undefined
    if (!row) throw noFlag(key)
    res.type('application/json').send(row.data)
  })

  // Create, or replace entirely when the key exists.
  router.post('/', requireProjectRole('editor'), ...body, async (req, res) => {
    const env = environmentOf(req)
    const flag = parseOr422(flagBodySchema, req.body, 'flag')
    await runtime.write(async (trx, flags) => {
      const existing = await flags.get(flag.key, env.id)
      if (existing && (await requiresApproval(trx, env.id))) assertMayBypassApproval(env, 'replacing a flag')
      await assertFitsEnvironment(flags, env, flag)
      flags.put(flag, env.id)
    })
    res.json(flag)
  })

  // A merge patch: applied at once (200), or filed as a change request where approval is required (202).
  router.patch('/:key', requireProjectRole('editor'), ...body, async (req, res) => {
    const env = environmentOf(req)
    const key = keyOf(req)
    const patch = parseOr422(flagPatchSchema, req.body, 'patch')
    const result = await runtime.write(async (trx, flags) => {
      const current = (await flags.get(key, env.id)) as ServiceFlag | undefined
      if (!current) throw noFlag(key)
      const merged = mergeFlag(current, patch)
      await assertFitsEnvironment(flags, env, merged, 'flag after the patch')
      if (await requiresApproval(trx, env.id)) {
        const request = await fileChangeRequest(trx, {
          environmentId: env.id,
          flagKey: key,
          patch,
          actor: await actorOf(trx, authOf(req)),
          now: runtime.clock(),
        })
        return { status: 202, body: changeRequestJson(request) }
      }
      flags.put(merged, env.id)
      return { status: 200, body: merged }
    })
    res.status(result.status).json(result.body)
  })

  router.delete('/:key', requireProjectRole('editor'), async (req, res) => {
    const env = environmentOf(req)
    const key = keyOf(req)
    await runtime.write(async (trx, flags) => {
      if (!(await flags.get(key, env.id))) throw noFlag(key)
      if (await requiresApproval(trx, env.id)) assertMayBypassApproval(env, 'deleting a flag')
      await assertNoDependents(trx, env.id, key)
      await flags.delete(key, env.id)
    })
    noContent(res)
  })

  // Copies the flag into another environment of the same project, in one transaction.
  router.post('/:key/promote', requireProjectRole('editor'), ...body, async (req, res) => {
    const env = environmentOf(req)
    const key = keyOf(req)
    const { target_env_id: targetId } = parseOr422(promoteSchema, req.body, 'promotion')
    const badTarget = (message: string) =>
      new HttpError('validation_failed', `invalid promotion: target_env_id: ${message}`, {
        issues: [{ path: 'target_env_id', message }],
      })
    if (targetId === env.id) throw badTarget('is the environment the flag is in')
    const flag = await runtime.write(async (trx, flags) => {
      const target = UUID_PATTERN.test(targetId)
        ? ((await trx('flagsync_environments')
            .where({ id: targetId, project_id: env.projectId })
            .first('id', 'name', 'require_approval')) as
            | { id: string; name: string; require_approval: boolean | number }
            | undefined)
        : undefined
      if (!target) throw badTarget('no environment with this id in the project')
      const source = (await flags.get(key, env.id)) as ServiceFlag | undefined
      if (!source) throw noFlag(key)
      if (target.require_approval && (await flags.get(key, target.id))) {
        assertMayBypassApproval({ name: target.name, role: env.role }, 'promoting over an existing flag')
      }
      const copy = parseOr422(flagBodySchema, source, 'flag')
      await assertFitsEnvironment(flags, { id: target.id, projectId: env.projectId }, copy, `flag in ${target.name}`)
      flags.put(copy, target.id)
      return copy
    })
    res.json(flag)
  })

  allowOnly(router, '/', 'GET, POST')
  allowOnly(router, '/:key', 'GET, PATCH, DELETE')
  allowOnly(router, '/:key/promote', 'POST')
  return router
}
