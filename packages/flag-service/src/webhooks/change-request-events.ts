import type { Knex } from 'knex'
import { isoOrNull } from '../records.js'
import { SERVICE_TABLES } from '../tables.js'
import { emitWebhookEvent } from './emit.js'
import type { WebhookEventType } from './tables.js'

type ChangeRequestEventType = Extract<WebhookEventType, `change_request.${string}`>

interface RequestWithEnvironment {
  id: number | string
  environment_id: string
  environment_name: string
  project_id: string
  flag_key: string
  patch: string
  status: string
  requested_by: string
  reviewed_by: string | null
  reason: string | null
  created_at: number | string
  reviewed_at: number | string | null
  base_revision: number | string | null
}

/**
 * Writes a change request's event with `trx`, after the request's row was
 * inserted or updated in it: the request is read back as it now is, so the
 * event says what commits. The actor is the reviewer, or the requester for
 * `change_request.created`.
 */
export async function emitChangeRequestEvent(
  trx: Knex,
  type: ChangeRequestEventType,
  id: number,
  now: number,
): Promise<void> {
  const row = (await trx({ r: 'flagsync_change_requests' })
    .join({ e: SERVICE_TABLES.environments }, 'e.id', 'r.environment_id')
    .where('r.id', id)
    .first('r.*', 'e.name as environment_name', 'e.project_id')) as RequestWithEnvironment | undefined
  if (!row) return
  const data = {
    project_id: row.project_id,
    environment: { id: row.environment_id, name: row.environment_name },
    flag_key: row.flag_key,
    actor: type === 'change_request.created' ? row.requested_by : row.reviewed_by,
    change_request: {
      id: Number(row.id),
      status: row.status,
      patch: JSON.parse(row.patch) as unknown,
      requested_by: row.requested_by,
      reviewed_by: row.reviewed_by,
      reason: row.reason,
      created_at: isoOrNull(row.created_at),
      reviewed_at: isoOrNull(row.reviewed_at),
      base_revision: row.base_revision === null ? null : Number(row.base_revision),
    },
  }
  await emitWebhookEvent(trx, { type, projectId: row.project_id, data }, { now })
}
