import type { AuditContext } from '@flagsync/store'
import type { Knex } from 'knex'
import type { ScheduleRow } from './rows.js'
import { SCHEDULES_TABLE } from './tables.js'

/** A due schedule as found before its transaction: what batches it. */
export interface DueSchedule {
  id: number
  environment_id: string
  flag_key: string
}

/** Pending schedules that may run: in an environment without approval, or approved. */
const runnable = (knex: Knex) =>
  knex(`${SCHEDULES_TABLE} as s`)
    .join('flagsync_environments as e', 'e.id', 's.environment_id')
    .where('s.status', 'pending')
    .where((q) => {
      q.where('e.require_approval', false).orWhereNotNull('s.approved_at')
    })

/** Runnable schedules due at `now`, oldest `run_at` first, at most `limit`. */
export async function dueSchedules(knex: Knex, now: number, limit: number): Promise<DueSchedule[]> {
  const rows = (await runnable(knex)
    .where('s.run_at', '<=', now)
    .orderBy([{ column: 's.run_at' }, { column: 's.id' }])
    .limit(limit)
    .select('s.id', 's.environment_id', 's.flag_key')) as Array<DueSchedule & { id: number | string }>
  return rows.map((r) => ({ ...r, id: Number(r.id) }))
}

/** The earliest `run_at` of a runnable schedule, if any. */
export async function nextRunAt(knex: Knex): Promise<number | undefined> {
  const row = (await runnable(knex).min('s.run_at as next').first()) as { next: number | string | null } | undefined
  return row?.next === null || row?.next === undefined ? undefined : Number(row.next)
}

/** The most schedules one transaction applies. */
export const MAX_PER_TRANSACTION = 50

/**
 * Due schedules in transactions of their own, in order: one transaction's schedules share an environment (its
 * checks read it once) and no flag (each changes its flag at most once, so its change-log row belongs to exactly
 * one of them). Their creators and approvers may differ: each change is recorded under its own schedule's audit
 * context (see `scheduleAudit`).
 */
export function batchesOf(due: readonly DueSchedule[]): DueSchedule[][] {
  const open = new Map<string, DueSchedule[]>()
  const out: DueSchedule[][] = []
  for (const schedule of due) {
    let batch = open.get(schedule.environment_id)
    const full =
      batch !== undefined &&
      (batch.length >= MAX_PER_TRANSACTION || batch.some((b) => b.flag_key === schedule.flag_key))
    if (!batch || full) {
      batch = []
      open.set(schedule.environment_id, batch)
      out.push(batch)
    }
    batch.push(schedule)
  }
  return out
}

/** The change log's `source` column holds 256 characters. */
const MAX_SOURCE = 256

/**
 * The audit context of one schedule's change: the creator acts (the change is theirs, made later); the source
 * names the schedule and, where someone approved it, the approver (`schedule:12`, `schedule:12 approved by
 * bob@example.com`), which the audit routes send as `{type: "schedule", id, createdBy, approvedBy}`.
 */
export function scheduleAudit(
  schedule: Pick<ScheduleRow, 'id' | 'created_by_actor' | 'approved_by_actor'>,
): AuditContext {
  const approval = schedule.approved_by_actor === null ? '' : ` approved by ${schedule.approved_by_actor}`
  // A long approver name is cut to fit the column rather than never commit.
  return {
    actor: schedule.created_by_actor,
    declaredActor: null,
    source: `schedule:${Number(schedule.id)}${approval}`.slice(0, MAX_SOURCE),
  }
}
