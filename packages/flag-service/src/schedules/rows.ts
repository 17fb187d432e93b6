import type { Knex } from 'knex'
import type { FlagPatch } from '../flags/model.js'
import { iso, isoOrNull } from '../records.js'
import type { ScheduleStatus } from './schema.js'
import { SCHEDULES_TABLE } from './tables.js'

type Num = number | string

export interface ScheduleRow {
  id: Num
  environment_id: string
  flag_key: string
  patch: string
  run_at: Num
  status: ScheduleStatus
  created_by: string
  created_by_actor: string
  created_by_user_id: Num | null
  created_by_key_id: Num | null
  approved_by: string | null
  approved_by_actor: string | null
  approved_at: Num | null
  base_revision: Num | null
  created_at: Num
  applied_at: Num | null
  result: string | null
}

/** What a schedule that left `pending` records in `result`. */
export type ScheduleResult =
  | { changed: boolean; late_ms: number }
  | { reason: string; code: string; late_ms: number; details?: unknown }
  | { cancelled_by: string }

/**
 * A schedule as answered. `requires_approval` is the environment's setting now (it is read again when the
 * schedule runs); `overdue` marks a pending schedule past its `run_at` that still waits for its approval.
 */
export function scheduleJson(row: ScheduleRow, requireApproval: boolean, now: number) {
  const waitsForApproval = row.status === 'pending' && requireApproval && row.approved_at === null
  return {
    id: Number(row.id),
    environment_id: row.environment_id,
    flag_key: row.flag_key,
    patch: JSON.parse(row.patch) as FlagPatch,
    run_at: iso(row.run_at),
    status: row.status,
    created_by: row.created_by,
    created_at: iso(row.created_at),
    applied_at: isoOrNull(row.applied_at),
    result: row.result === null ? null : (JSON.parse(row.result) as ScheduleResult),
    base_revision: row.base_revision === null ? null : Number(row.base_revision),
    requires_approval: requireApproval,
    approved_by: row.approved_by,
    approved_at: isoOrNull(row.approved_at),
    overdue: waitsForApproval && Number(row.run_at) <= now,
  }
}

/** Inserts a schedule and returns its id. */
export async function insertScheduleRow(trx: Knex, record: Omit<ScheduleRow, 'id'>): Promise<number> {
  const [inserted] = (await trx(SCHEDULES_TABLE).insert(record, ['id'])) as Array<{ id: Num }>
  return Number(inserted?.id)
}

/** An environment's schedules (of one flag, of one status, when given), soonest run_at first. */
export async function listScheduleRows(
  knex: Knex,
  environmentId: string,
  filter: { flagKey?: string; status?: ScheduleStatus | undefined },
): Promise<ScheduleRow[]> {
  const query = knex(SCHEDULES_TABLE)
    .where('environment_id', environmentId)
    .orderBy([{ column: 'run_at' }, { column: 'id' }])
  if (filter.flagKey !== undefined) query.where('flag_key', filter.flagKey)
  if (filter.status) query.where('status', filter.status)
  return (await query.select('*')) as ScheduleRow[]
}

/** One schedule of an environment, or undefined when it has none with this id. */
export const scheduleRow = async (trx: Knex, environmentId: string, id: number): Promise<ScheduleRow | undefined> =>
  (await trx(SCHEDULES_TABLE).where({ id, environment_id: environmentId }).first()) as ScheduleRow | undefined

/** Changes a schedule's columns (a cancellation, an approval). */
export async function updateSchedule(trx: Knex, id: Num, update: Partial<Omit<ScheduleRow, 'id'>>): Promise<void> {
  await trx(SCHEDULES_TABLE).where('id', id).update(update)
}
