import { HttpError } from '@flagsync/server-kit'
import type { AuditContext } from '@flagsync/store'
import type { Knex } from 'knex'
import { requiresApproval } from '../flags/change-requests.js'
import type { FlagPatch } from '../flags/model.js'
import type { ServiceRuntime } from '../service-runtime.js'
import { writeScheduledPatch } from './apply.js'
import { emitScheduleOutcome } from './events.js'
import type { ScheduleResult, ScheduleRow } from './rows.js'
import { SCHEDULES_TABLE } from './tables.js'

/** A due schedule as found before its transaction: enough to name it in the audit trail. */
export interface DueSchedule {
  id: number
  created_by_actor: string
  approved_by_actor: string | null
}

/** What one schedule's transaction did: applied or failed it, or left it (another instance took it, or it waits). */
export type ClaimOutcome = 'applied' | 'failed' | 'skipped'

/**
 * Pending schedules due at `now` that may run: in an environment without approval, or approved. Oldest `run_at`
 * first, at most `limit`.
 */
export async function dueSchedules(knex: Knex, now: number, limit: number): Promise<DueSchedule[]> {
  const rows = (await knex(`${SCHEDULES_TABLE} as s`)
    .join('flagsync_environments as e', 'e.id', 's.environment_id')
    .where('s.status', 'pending')
    .where('s.run_at', '<=', now)
    .where((q) => q.where('e.require_approval', false).orWhereNotNull('s.approved_at'))
    .orderBy([{ column: 's.run_at' }, { column: 's.id' }])
    .limit(limit)
    .select('s.id', 's.created_by_actor', 's.approved_by_actor')) as Array<DueSchedule & { id: number | string }>
  return rows.map((r) => ({ ...r, id: Number(r.id) }))
}

/** The earliest `run_at` of a pending schedule that may run (approved or without approval), if any. */
export async function nextRunAt(knex: Knex): Promise<number | undefined> {
  const row = (await knex(`${SCHEDULES_TABLE} as s`)
    .join('flagsync_environments as e', 'e.id', 's.environment_id')
    .where('s.status', 'pending')
    .where((q) => q.where('e.require_approval', false).orWhereNotNull('s.approved_at'))
    .min('s.run_at as next')
    .first()) as { next: number | string | null } | undefined
  return row?.next === null || row?.next === undefined ? undefined : Number(row.next)
}

/**
 * The audit context of a schedule's change: its creator acts (the change is theirs, made later), the source names
 * the schedule and, where one was needed, its approver: `schedule:12 approved by bob@example.com`.
 */
export function scheduleAudit(due: DueSchedule): AuditContext {
  const approval = due.approved_by_actor === null ? '' : ` approved by ${due.approved_by_actor}`
  return { actor: due.created_by_actor, declaredActor: null, source: `schedule:${due.id}${approval}` }
}

/**
 * Claims one due schedule and applies it, in one transaction of the flag store: the claim (`FOR UPDATE SKIP
 * LOCKED` on PostgreSQL; SQLite's single writer holds the database), the flag write and the status update commit
 * together, so a crash before the commit leaves the schedule pending and one after leaves it applied.
 */
export async function claimAndApply(runtime: ServiceRuntime, due: DueSchedule): Promise<ClaimOutcome> {
  return runtime.write(async (trx, flags) => {
    const row = await claim(trx, runtime.db.config.dialect, due.id)
    if (!row) return 'skipped'
    if ((await requiresApproval(trx, row.environment_id)) && row.approved_at === null) return 'skipped'
    const now = runtime.clock()
    const lateMs = Math.max(0, now - Number(row.run_at))
    const env = (await trx('flagsync_environments').where('id', row.environment_id).first('project_id', 'name')) as {
      project_id: string
      name: string
    }
    let result: ScheduleResult
    try {
      const patch = JSON.parse(row.patch) as FlagPatch
      const base = row.base_revision === null ? null : Number(row.base_revision)
      const target = { id: row.environment_id, projectId: env.project_id, name: env.name }
      const changed = await writeScheduledPatch(flags, target, row.flag_key, patch, base)
      result = { changed, late_ms: lateMs }
    } catch (error) {
      if (!(error instanceof HttpError)) throw error
      result = { reason: error.message, code: error.code, late_ms: lateMs, ...detailsOf(error) }
    }
    const status = 'changed' in result ? 'applied' : 'failed'
    await trx(SCHEDULES_TABLE)
      .where('id', row.id)
      .update({ status, applied_at: now, result: JSON.stringify(result) })
    await emitScheduleOutcome(
      trx,
      { ...row, status, applied_at: now, result: JSON.stringify(result) },
      env.project_id,
      now,
    )
    return status
  }, scheduleAudit(due))
}

async function claim(trx: Knex.Transaction, dialect: string, id: number): Promise<ScheduleRow | undefined> {
  const query = trx(SCHEDULES_TABLE).where({ id, status: 'pending' }).first()
  if (dialect === 'postgres') query.forUpdate().skipLocked()
  return (await query) as ScheduleRow | undefined
}

function detailsOf(error: HttpError): { details?: unknown } {
  const { conflicts, issues } = error.details as { conflicts?: unknown; issues?: unknown }
  if (conflicts !== undefined) return { details: { conflicts } }
  if (issues !== undefined) return { details: { issues } }
  return {}
}
