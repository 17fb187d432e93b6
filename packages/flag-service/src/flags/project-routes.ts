import { HttpError, parseOr422 } from '@flagsync/server-kit'
import { Router } from 'express'
import { auditOf, flagJson, revisionIn, withoutRevision } from '../audit/flag-audit.js'
import { projectOf, requireProjectRole } from '../auth/guards.js'
import { environmentRefs } from '../environments/queries.js'
import { allowOnly, jsonBodyFor, type RouterOptions } from '../http.js'
import type { ServiceRuntime } from '../service-runtime.js'
import { createFlagLifecycleRouter } from './lifecycle-routes.js'
import { applyMeta, splitMeta } from './meta.js'
import { createInEnvironmentsSchema, flagBodySchema } from './model.js'
import { throwUnlessWritten, writeFlagIn } from './write-flag.js'

interface Target {
  id: string
  name: string
}

/**
 * /api/projects/:project_id/flags (after `loadProject`): `POST` creates one new flag in several environments of
 * the project in one transaction, all or nothing. It only creates: a key that exists in any of them is a 409 naming
 * those environments, and a flag that does not fit one of them (a prerequisite missing there) is a 422 naming it; in
 * either case nothing is created anywhere. Creating a new flag is open to editors also where approval is required
 * (as `POST /api/environments/:env_id/flags` of a new key is), so no environment turns this into a change request.
 */
export function createProjectFlagsRouter(runtime: ServiceRuntime, options: RouterOptions = {}): Router {
  const router = Router({ mergeParams: true })
  const body = jsonBodyFor(options)

  router.post('/', requireProjectRole('editor'), ...body, async (req, res) => {
    const project = projectOf(req)
    const request = parseOr422(createInEnvironmentsSchema, req.body, 'creation')
    const { record, meta } = splitMeta(withoutRevision(request.flag))
    const flag = parseOr422(flagBodySchema, record, 'flag')
    const ids = [...new Set(request.environment_ids)]
    const { result: targets, changes } = await runtime.commit(
      async (trx, flags) => {
        const targets = await targetsIn(trx, project.id, ids)
        const taken: Target[] = []
        for (const env of targets) if (await flags.get(flag.key, env.id)) taken.push(env)
        if (taken.length > 0) {
          throw new HttpError(
            'conflict',
            `${flag.key} exists in ${taken.map((e) => e.name).join(', ')}: nothing was created (edit it there, or leave ${taken.length === 1 ? 'that environment' : 'those environments'} out)`,
            { environments: taken },
          )
        }
        // Each a put of a new key through the one write path (its checks, the approval gate: creating is open).
        for (const env of targets) {
          const target = { ...env, projectId: project.id, role: project.role }
          const intent = { action: 'put', key: flag.key, record: flag } as const
          throwUnlessWritten(await writeFlagIn(flags, target, intent, { what: `flag in ${env.name}` }))
        }
        await applyMeta(flags, project.id, flag.key, meta)
        return targets
      },
      await auditOf(runtime.knex, req),
      req,
    )
    const created = targets.map(
      (env) =>
        `{"environment_id":${JSON.stringify(env.id)},"flag":${flagJson(flag, revisionIn(changes, env.id, flag.key, null) ?? 0)}}`,
    )
    res.type('application/json').send(`{"key":${JSON.stringify(flag.key)},"created":[${created.join(',')}]}`)
  })

  allowOnly(router, '/', 'POST')
  router.use(createFlagLifecycleRouter(runtime, options))
  return router
}

/** The listed environments of the project, in the order listed; an id that is not one of them is a 422. */
async function targetsIn(
  trx: Parameters<Parameters<ServiceRuntime['write']>[0]>[0],
  projectId: string,
  ids: string[],
): Promise<Target[]> {
  const rows = await environmentRefs(trx, projectId, ids)
  const byId = new Map(rows.map((r) => [r.id, { id: r.id, name: r.name }]))
  const missing = ids.filter((id) => !byId.has(id))
  if (missing.length > 0) {
    const message = `no environment ${missing.map((id) => JSON.stringify(id)).join(', ')} in this project`
    throw new HttpError('validation_failed', `invalid creation: environment_ids: ${message}`, {
      issues: [{ path: 'environment_ids', message }],
    })
  }
  return ids.map((id) => byId.get(id) as Target)
}
