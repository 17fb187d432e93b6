import { HttpError } from '@flagsync/server-kit'
import { TABLES } from '@flagsync/store'
import type { Knex } from 'knex'
import type { ChangeRequestStatus } from '../flags/model.js'
import { emitChangeRequestEvent } from '../webhooks/change-request-events.js'
import { CHANGE_REQUESTS_TABLE } from './tables.js'

type Num = number | string

export interface ChangeRequestRow {
  id: Num
  environment_id: string
  flag_key: string
  patch: string
  requested_by: string
  requested_by_user_id: Num | null
  requested_by_key_id: Num | null
  status: ChangeRequestStatus
  reviewed_by: string | null
  reason: string | null
  created_at: Num
  reviewed_at: Num | null
  base_revision: Num | null
  batch_id: string | null
  op_index: Num | null
}

export const noRequest = (raw: string) =>
  new HttpError('not_found', `no change request ${JSON.stringify(raw)} in this environment`)

/** One change request of an environment; 404 when the environment has none with this id. */
export async function findChangeRequest(trx: Knex, environmentId: string, id: number): Promise<ChangeRequestRow> {
  const row = (await trx(CHANGE_REQUESTS_TABLE).where({ id, environment_id: environmentId }).first()) as
    | ChangeRequestRow
    | undefined
  if (!row) throw noRequest(String(id))
  return row
}

/** An environment's change requests, newest first, of one status or all. */
export async function listChangeRequests(
  knex: Knex,
  environmentId: string,
  status: ChangeRequestStatus | undefined,
): Promise<ChangeRequestRow[]> {
  const query = knex(CHANGE_REQUESTS_TABLE).where('environment_id', environmentId).orderBy('id', 'desc')
  if (status) query.where('status', status)
  return (await query.select('*')) as ChangeRequestRow[]
}

/** The current revision of each listed flag of an environment (absent: the flag does not exist). */
export async function flagRevisions(knex: Knex, environmentId: string, keys: string[]): Promise<Map<string, number>> {
  const out = new Map<string, number>()
  const unique = [...new Set(keys)]
  for (let i = 0; i < unique.length; i += 500) {
    const rows = (await knex(TABLES.flags)
      .where('scope', environmentId)
      .whereIn('key', unique.slice(i, i + 500))
      .select('key', 'revision')) as Array<{ key: string; revision: Num }>
    for (const row of rows) out.set(row.key, Number(row.revision))
  }
  return out
}

/** Who filed each of these requests (and in which environment), for the audit trail's entries they caused. */
export const requestersOf = async (
  knex: Knex,
  ids: readonly number[],
): Promise<Array<Pick<ChangeRequestRow, 'id' | 'environment_id' | 'requested_by'>>> =>
  (await knex(CHANGE_REQUESTS_TABLE).whereIn('id', ids).select('id', 'environment_id', 'requested_by')) as Array<
    Pick<ChangeRequestRow, 'id' | 'environment_id' | 'requested_by'>
  >

/** The requests a sync batch filed in an environment, in its operations' order. */
export const requestsOfBatch = async (
  knex: Knex,
  batchId: string,
  environmentId: string,
): Promise<Array<Pick<ChangeRequestRow, 'id' | 'flag_key' | 'op_index'>>> =>
  (await knex(CHANGE_REQUESTS_TABLE)
    .where({ batch_id: batchId, environment_id: environmentId })
    .orderBy('op_index')
    .select('id', 'flag_key', 'op_index')) as Array<Pick<ChangeRequestRow, 'id' | 'flag_key' | 'op_index'>>

/** A request's new row as filed, before it has an id. */
export type NewChangeRequest = Omit<ChangeRequestRow, 'id'>

/** Inserts a filed request and queues its `change_request.created` webhook event; resolves its id. */
export async function insertChangeRequest(trx: Knex, record: NewChangeRequest, now: number): Promise<number> {
  const [inserted] = (await trx(CHANGE_REQUESTS_TABLE).insert(record, ['id'])) as Array<{ id: Num }>
  await emitChangeRequestEvent(trx, 'change_request.created', Number(inserted?.id), now)
  return Number(inserted?.id)
}

/** The outcome of a review: its status, who decided and when, and a rejection's reason. */
export interface Decision {
  status: 'approved' | 'rejected' | 'cancelled'
  reviewedBy: string
  at: number
  reason?: string | null
}

/** Records a decision on a pending request and queues its `change_request.<status>` webhook event. */
export async function recordDecision(trx: Knex, id: number, decision: Decision): Promise<void> {
  await trx(CHANGE_REQUESTS_TABLE)
    .where('id', id)
    .update({
      status: decision.status,
      reviewed_by: decision.reviewedBy,
      reviewed_at: decision.at,
      ...(decision.reason === undefined ? {} : { reason: decision.reason }),
    })
  await emitChangeRequestEvent(trx, `change_request.${decision.status}`, id, decision.at)
}
