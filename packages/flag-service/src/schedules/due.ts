import type { AuditContext } from '@flagsync/store'
import type { Knex } from 'knex'
import { SCHEDULES_TABLE } from './tables.js'

/** A due schedule as found before its transaction: what batches it and names it in the audit trail. */
export interface DueSchedule {
  id: number
  environment_id: string
  flag_key: string
  created_by_actor: string
  approved_by_actor: string | null
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
    .select('s.id', 's.environment_id', 's.flag_key', 's.created_by_actor', 's.approved_by_actor')) as Array<
    DueSchedule & { id: number | string }
  >
  return rows.map((r) => ({ ...r, id: Number(r.id) }))
}

/** The earliest `run_at` of a runnable schedule, if any. */
export async function nextRunAt(knex: Knex): Promise<number | undefined> {
  const row = (await runnable(knex).min('s.run_at as next').first()) as { next: number | string | null } | undefined
  return row?.next === null || row?.next === undefined ? undefined : Number(row.next)
}

/** The most schedules one transaction applies. */
export const MAX_PER_TRANSACTION = 50
/** The change log's `source` column holds 256 characters. */
const MAX_SOURCE = 256

/**
 * Due schedules in transactions of their own, in order: one transaction's schedules share an environment (its
 * checks read it once), a creator and an approver (the change log's audit context is one per transaction), and no
 * flag (each changes its flag at most once, so its change-log row belongs to exactly one of them).
 */
export function batchesOf(due: readonly DueSchedule[]): DueSchedule[][] {
  const open = new Map<string, DueSchedule[]>()
  const out: DueSchedule[][] = []
  for (const schedule of due) {
    const group = JSON.stringify([schedule.environment_id, schedule.created_by_actor, schedule.approved_by_actor])
    let batch = open.get(group)
    const full =
      batch !== undefined &&
      (batch.length >= MAX_PER_TRANSACTION ||
        batch.some((b) => b.flag_key === schedule.flag_key) ||
        sourceOf([...batch, schedule]).length > MAX_SOURCE)
    if (!batch || full) {
      batch = []
      open.set(group, batch)
      out.push(batch)
    }
    batch.push(schedule)
  }
  return out
}

/**
 * The audit context of a transaction's scheduled changes: the creator acts (the change is theirs, made later), the
 * source names the schedules and, where one was needed, the approver: `schedule:12`, `schedule:12 approved by
 * bob@example.com`, or for a transaction that applied several (each to its own flag) `schedule:12,13,14`.
 */
export function scheduleAudit(batch: readonly DueSchedule[]): AuditContext {
  // A single schedule with a long approver name is cut to fit the column rather than never commit.
  return {
    actor: batch[0]?.created_by_actor ?? null,
    declaredActor: null,
    source: sourceOf(batch).slice(0, MAX_SOURCE),
  }
}

function sourceOf(batch: readonly DueSchedule[]): string {
  const approver = batch[0]?.approved_by_actor
  const approval = approver === null || approver === undefined ? '' : ` approved by ${approver}`
  return `schedule:${batch.map((s) => s.id).join(',')}${approval}`
}
