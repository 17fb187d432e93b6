import { HttpError, parseOr422 } from '@flagsync/server-kit'
import { Router } from 'express'
import { projectOf, requireProjectRole } from '../auth/guards.js'
import { recordRevocation } from '../auth/revocations.js'
import { environmentRef } from '../environments/queries.js'
import { allowOnly, jsonBodyFor, noContent, type RouterOptions } from '../http.js'
import { intId } from '../schemas.js'
import type { ServiceRuntime } from '../service-runtime.js'
import { deleteSdkKey, insertSdkKey, listSdkKeys, sdkKeyKind, serverKeyCount } from './queries.js'
import { sdkKeyJson } from './rows.js'
import { createSdkKeySchema } from './schema.js'

const noKey = (raw: string) => new HttpError('not_found', `no SDK key ${JSON.stringify(raw)} in this project`)

/**
 * /api/projects/:project_id/keys (after `loadProject`): members list the keys
 * (kind and display prefix only), project admins create and delete them. The
 * full key is in the create response and nowhere else: only its SHA-256 is
 * stored. A key is a server key (`sk_live_…`) unless created with
 * `kind: "client"` (`pk_live_…`, see `clientKeyMay`).
 */
export function createSdkKeysRouter(runtime: ServiceRuntime, options: RouterOptions = {}): Router {
  const router = Router({ mergeParams: true })
  const body = jsonBodyFor(options)

  router.get('/', requireProjectRole('viewer'), async (req, res) => {
    const rows = await listSdkKeys(runtime.knex, projectOf(req).id)
    res.json(rows.map(sdkKeyJson))
  })

  router.post('/', requireProjectRole('admin'), ...body, async (req, res) => {
    const input = parseOr422(createSdkKeySchema, req.body, 'SDK key')
    const projectId = projectOf(req).id
    const created = await runtime.write(
      async (trx) => {
        const env = await environmentRef(trx, projectId, input.environment_id)
        if (!env) {
          const message = `no environment ${JSON.stringify(input.environment_id)} in this project`
          throw new HttpError('validation_failed', `invalid SDK key: environment_id: ${message}`, {
            issues: [{ path: 'environment_id', message }],
          })
        }
        return insertSdkKey(trx, {
          projectId,
          environmentId: env.id,
          environmentName: env.name,
          name: input.name,
          kind: input.kind,
          now: runtime.clock(),
        })
      },
      undefined,
      req,
    )
    res.json({ ...sdkKeyJson(created.row), key: created.key })
  })

  router.delete('/:id', requireProjectRole('admin'), async (req, res) => {
    const raw = String(req.params.id)
    const id = intId(raw)
    if (id === undefined) throw noKey(raw)
    const projectId = projectOf(req).id
    await runtime.write(
      async (trx, flags) => {
        const kind = await sdkKeyKind(trx, projectId, id)
        if (!kind) throw noKey(raw)
        // A project keeps a server key (its SDKs and automation use it); client keys come and go freely.
        if (kind === 'server') {
          if ((await serverKeyCount(trx, projectId)) <= 1) {
            throw new HttpError(
              'validation_failed',
              'cannot delete the last server key of a project: create another first',
            )
          }
        }
        await deleteSdkKey(trx, projectId, id)
        recordRevocation(flags, `sdk_key:${id}`, runtime.clock()) // its open streams end now
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
