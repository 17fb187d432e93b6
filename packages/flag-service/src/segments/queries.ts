import { TABLES } from '@flagsync/store'
import type { Knex } from 'knex'
import { segmentUsage } from '../flags/checks.js'
import { segmentScope } from '../flags/expand.js'
import { SERVICE_TABLES } from '../tables.js'

/** A project's segments (their JSON), by key. */
export const listSegmentRows = async (knex: Knex, projectId: string): Promise<Array<{ data: string }>> =>
  (await knex(TABLES.flags).where('scope', segmentScope(projectId)).orderBy('key').select('data')) as Array<{
    data: string
  }>

/** One segment of a project (its JSON), or undefined when there is none with this key. */
export const segmentRow = async (knex: Knex, projectId: string, key: string): Promise<{ data: string } | undefined> =>
  (await knex(TABLES.flags)
    .where({ scope: segmentScope(projectId), key })
    .first('data')) as { data: string } | undefined

/** Names of the project's approval-required environments whose flags reference the segment. */
export async function approvalEnvironmentsUsing(trx: Knex, projectId: string, key: string): Promise<string[]> {
  const usage = await segmentUsage(trx, projectId, key)
  if (usage.length === 0) return []
  const rows = (await trx(SERVICE_TABLES.environments)
    .whereIn('id', [...new Set(usage.map((u) => u.environment_id))])
    .where('require_approval', true)
    .orderBy('position')
    .select('name')) as Array<{ name: string }>
  return rows.map((r) => r.name)
}
