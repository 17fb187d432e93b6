import type { FlagPatch } from '../flags/model.js'
import { iso, isoOrNull } from '../records.js'
import type { ScheduleStatus } from './schema.js'

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
