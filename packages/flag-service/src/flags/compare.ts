import { flagDifferences } from '@flagsync/protocol'
import { HttpError, parseOr422 } from '@flagsync/server-kit'
import { Router } from 'express'
import { projectOf, requireProjectRole } from '../auth/guards.js'
import { environmentRef } from '../environments/queries.js'
import { allowOnly } from '../http.js'
import type { ServiceRuntime } from '../service-runtime.js'
import { compareQuerySchema } from './model.js'
import { listFlagRows } from './queries.js'

type Status = 'same' | 'different' | 'only_in_from' | 'only_in_to'

interface Side {
  flag: Record<string, unknown>
  revision: number
}

/**
 * `GET /api/projects/:project_id/compare?from=<env_id>&to=<env_id>` (project viewers): every flag key of either
 * environment, sorted, with its `status`, the fields that differ (`flagDifferences`: `{field, from, to}`, a side
 * where the field is not set has no member; segment references compared as references) and each side's
 * `revision` (null where absent): `to_revision` is the `base_revision` a promotion from → to sends.
 * An id that is missing, repeated or not an environment of the project is a 422 naming `from` or `to`; so is any
 * other parameter, naming it.
 */
export function createCompareRouter(runtime: ServiceRuntime): Router {
  const router = Router({ mergeParams: true })
  router.get('/', requireProjectRole('viewer'), async (req, res) => {
    const project = projectOf(req)
    parseOr422(compareQuerySchema, req.query, 'query')
    const [from, to] = await Promise.all(
      (['from', 'to'] as const).map(async (name) => {
        const id = req.query[name]
        const env = typeof id === 'string' ? await environmentRef(runtime.knex, project.id, id) : undefined
        if (!env) throw badComparison(name, 'must be the id of an environment of this project')
        return env
      }),
    )
    const [fromFlags, toFlags] = await Promise.all([flagsOf(runtime, from?.id), flagsOf(runtime, to?.id)])
    const keys = [...new Set([...fromFlags.keys(), ...toFlags.keys()])].sort()
    res.json({ from, to, flags: keys.map((key) => compared(key, fromFlags.get(key), toFlags.get(key))) })
  })
  allowOnly(router, '/', 'GET')
  return router
}

function compared(key: string, from: Side | undefined, to: Side | undefined) {
  const differences = flagDifferences(from?.flag, to?.flag)
  const status: Status = !to ? 'only_in_from' : !from ? 'only_in_to' : differences.length ? 'different' : 'same'
  return { key, status, from_revision: from?.revision ?? null, to_revision: to?.revision ?? null, differences }
}

/** An environment's flags by key, straight from the database, each with its revision. */
async function flagsOf(runtime: ServiceRuntime, environmentId: string | undefined): Promise<Map<string, Side>> {
  const rows = await listFlagRows(runtime.knex, environmentId ?? '')
  return new Map(
    rows.map((r) => {
      const flag = JSON.parse(r.data) as Record<string, unknown>
      return [String(flag.key), { flag, revision: Number(r.revision) }]
    }),
  )
}

const badComparison = (path: 'from' | 'to', message: string) =>
  new HttpError('validation_failed', `invalid comparison: ${path}: ${message}`, { issues: [{ path, message }] })
