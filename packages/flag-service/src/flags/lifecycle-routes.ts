import { flagKeySchema } from '@flagsync/protocol'
import { HttpError, parseOr422 } from '@flagsync/server-kit'
import { type Request, Router } from 'express'
import { auditOf, flagJson, revisionIn } from '../audit/flag-audit.js'
import { projectOf, requireProjectRole } from '../auth/guards.js'
import { allowOnly, jsonBodyFor, type RouterOptions } from '../http.js'
import type { ServiceRuntime } from '../service-runtime.js'
import { archiveFlag, restoreFlag } from './archive.js'
import { applyMeta, type FlagMeta, flagInProject, lifecycleActionSchema, metaPatchSchema } from './meta.js'

const noFlag = (key: string) =>
  new HttpError('not_found', `no flag ${JSON.stringify(key)} in any environment of this project`)

/** The `:key` of the path; a key outside the key alphabet cannot exist, so it is a 404 without a query. */
function keyOf(req: Request): string {
  const key = String(req.params.key)
  if (!flagKeySchema.safeParse(key).success) throw noFlag(key)
  return key
}

const metaJson = (meta: FlagMeta) => ({ key: meta.key, tags: meta.tags, owner: meta.owner })

/**
 * A flag's project-level lifecycle, under /api/projects/:project_id/flags (after `loadProject`), for editors:
 * - `PATCH /:key/meta` `{tags?, owner?}` sets its tags and owner (in every environment: they describe the flag);
 * - `POST /:key/archive` takes it out of every environment of the project at once, keeping each definition;
 * - `POST /:key/restore` brings those definitions back.
 * Where an environment requires approval, archiving needs the project admin role there, as deleting does.
 */
export function createFlagLifecycleRouter(runtime: ServiceRuntime, options: RouterOptions = {}): Router {
  const router = Router({ mergeParams: true })
  const body = jsonBodyFor(options)

  router.patch('/:key/meta', requireProjectRole('editor'), ...body, async (req, res) => {
    const project = projectOf(req)
    const key = keyOf(req)
    const fields = parseOr422(metaPatchSchema, req.body, 'metadata')
    const meta = await runtime.write(
      async (_trx, flags) => {
        const current = await flagInProject(flags, project.id, key)
        if (!current) throw noFlag(key)
        return applyMeta(flags, project.id, key, fields, 'metadata')
      },
      await auditOf(runtime.knex, req),
      req,
    )
    res.json(metaJson(meta))
  })

  router.post('/:key/archive', requireProjectRole('editor'), ...body, async (req, res) => {
    parseOr422(lifecycleActionSchema, req.body, 'archive')
    const project = projectOf(req)
    const key = keyOf(req)
    const audit = await auditOf(runtime.knex, req)
    const at = new Date(runtime.clock()).toISOString()
    const { meta, environments } = await runtime.write(
      (_trx, flags) => archiveFlag(flags, project, key, { at, by: audit.actor ?? null }),
      audit,
      req,
    )
    res.json({ ...metaJson(meta), archived: { at, by: audit.actor ?? null, environments } })
  })

  router.post('/:key/restore', requireProjectRole('editor'), ...body, async (req, res) => {
    parseOr422(lifecycleActionSchema, req.body, 'restore')
    const project = projectOf(req)
    const key = keyOf(req)
    const { result, changes } = await runtime.commit(
      (_trx, flags) => restoreFlag(flags, project, key),
      await auditOf(runtime.knex, req),
      req,
    )
    const restored = result.restored.map(
      (r) =>
        `{"environment_id":${JSON.stringify(r.environment_id)},"flag":${flagJson(r.flag, revisionIn(changes, r.environment_id, key, null) ?? 0)}}`,
    )
    const head = JSON.stringify(metaJson(result.meta)).slice(0, -1)
    res.type('application/json').send(`${head},"restored":[${restored.join(',')}]}`)
  })

  allowOnly(router, '/:key/meta', 'PATCH')
  allowOnly(router, '/:key/archive', 'POST')
  allowOnly(router, '/:key/restore', 'POST')
  return router
}
