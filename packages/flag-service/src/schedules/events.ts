import type { Knex } from 'knex'
import { emitWebhookEvents, type WebhookEvent } from '../webhooks/emit.js'
import type { ScheduleRow } from './rows.js'

/**
 * `schedule.applied` or `schedule.failed`, with what a receiver needs to tell which change it was: the
 * environment, the flag, the schedule, who created and approved it, and its `result`.
 */
function scheduleEvent(row: ScheduleRow, projectId: string): WebhookEvent {
  return {
    type: row.status === 'applied' ? 'schedule.applied' : 'schedule.failed',
    projectId,
    data: {
      environment_id: row.environment_id,
      flag_key: row.flag_key,
      schedule_id: Number(row.id),
      created_by: row.created_by,
      approved_by: row.approved_by,
      result: row.result === null ? null : (JSON.parse(row.result) as unknown),
    },
  }
}

/** Records schedules' outcomes for their projects' webhooks in the apply transaction: both commit, or neither. */
export async function emitScheduleOutcomes(
  trx: Knex,
  rows: readonly ScheduleRow[],
  projectId: string,
  now: number,
): Promise<void> {
  await emitWebhookEvents(
    trx,
    rows.map((row) => scheduleEvent(row, projectId)),
    { now },
  )
}
