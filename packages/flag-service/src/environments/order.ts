import { HttpError } from '@flagsync/server-kit'
import type { FlagWriter } from '@flagsync/store'
import type { Knex } from 'knex'
import { SERVICE_TABLES } from '../tables.js'

const T = SERVICE_TABLES

/**
 * The change-log scope of environment reorders (not an environment id, not a segment scope, so no stream serves
 * it as flags). One row, upserted per reorder; riding the change log makes every instance's dashboard streams
 * hear it the way they hear flag changes.
 */
export const ENVIRONMENT_ORDER_SCOPE = 'environment-order'

/** What a reorder records: the project and all its environment ids in the new order. */
type EnvironmentOrder = {
  key: 'order'
  project_id: string
  environment_ids: string[]
}

const notAPermutation = (message: string) =>
  new HttpError('validation_failed', `invalid environment order: environment_ids: ${message}`, {
    issues: [{ path: 'environment_ids', message }],
  })

/**
 * Gives the project's environments the positions 1…n in the order of `ids`, which must name each of them exactly
 * once (else a 422 that changes nothing). Runs in the caller's write transaction, so reorders, creations and
 * deletions serialize: two concurrent reorders end in one of the two orders, never a mix.
 */
export async function reorderEnvironments(
  trx: Knex.Transaction,
  flags: FlagWriter,
  projectId: string,
  ids: readonly string[],
): Promise<void> {
  const rows = (await trx(T.environments).where('project_id', projectId).select('id')) as Array<{ id: string }>
  const existing = new Set(rows.map((r) => r.id))
  const seen = new Set<string>()
  for (const id of ids) {
    if (seen.has(id)) throw notAPermutation(`lists ${JSON.stringify(id)} twice`)
    if (!existing.has(id)) throw notAPermutation(`${JSON.stringify(id)} is not an environment of this project`)
    seen.add(id)
  }
  const missing = rows.find((r) => !seen.has(r.id))
  if (missing)
    throw notAPermutation(`must list every environment of the project; ${JSON.stringify(missing.id)} is missing`)
  // Negative first: (project_id, position) is unique, and a row may take a position another still holds.
  for (const [i, id] of ids.entries()) {
    await trx(T.environments)
      .where({ project_id: projectId, id })
      .update({ position: -(i + 1) })
  }
  for (const [i, id] of ids.entries()) {
    await trx(T.environments)
      .where({ project_id: projectId, id })
      .update({ position: i + 1 })
  }
  const order: EnvironmentOrder = { key: 'order', project_id: projectId, environment_ids: [...ids] }
  flags.put(order, ENVIRONMENT_ORDER_SCOPE)
}
