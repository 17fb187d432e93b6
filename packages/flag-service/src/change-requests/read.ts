import { parseOr422 } from '@flagsync/server-kit'
import { environmentOf } from '../auth/guards.js'
import { changeRequestQuerySchema } from '../flags/model.js'
import type { ServiceRuntime } from '../service-runtime.js'
import { changeRequestJson } from './json.js'
import type { ChangeRequestHandler } from './request-id.js'
import { requestIdOf } from './request-id.js'
import { findChangeRequest, flagRevisions, listChangeRequests } from './rows.js'

/** GET /: an environment's requests, newest first (`?status=` filters), each marked stale or not. */
export function listRequests({ knex }: ServiceRuntime): ChangeRequestHandler {
  return async (req, res) => {
    const { status } = parseOr422(changeRequestQuerySchema, { status: req.query.status }, 'query')
    const environmentId = environmentOf(req).id
    const rows = await listChangeRequests(knex, environmentId, status)
    const revisions = await flagRevisions(
      knex,
      environmentId,
      rows.map((r) => r.flag_key),
    )
    res.json(rows.map((row) => changeRequestJson(row, revisions.get(row.flag_key))))
  }
}

/** GET /:id: one request, marked stale or not. */
export function getRequest({ knex }: ServiceRuntime): ChangeRequestHandler {
  return async (req, res) => {
    const env = environmentOf(req)
    const row = await findChangeRequest(knex, env.id, requestIdOf(req.params.id))
    res.json(changeRequestJson(row, (await flagRevisions(knex, env.id, [row.flag_key])).get(row.flag_key)))
  }
}
