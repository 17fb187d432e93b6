import { HttpError } from '@flagsync/server-kit'
import type { FlagWriter } from '@flagsync/store'
import type { Knex } from 'knex'
import { requiresApproval } from '../flags/checks.js'
import type { FlagPatch } from '../flags/model.js'
import type { ServiceRuntime } from '../service-runtime.js'
import { writeScheduledPatch } from './apply.js'
import { creatorCheck, creatorRefused } from './creator.js'
import { type DueSchedule, scheduleAudit } from './due.js'
import { emitScheduleOutcomes } from './events.js'
import type { ScheduleResult, ScheduleRow } from './rows.js'
import { SCHEDULES_TABLE } from './tables.js'

/**
 * Claims a batch of due schedules (see `batchesOf`) and applies them, in one transaction of the flag store: the
 * claim (`FOR UPDATE SKIP LOCKED` on PostgreSQL; SQLite's single writer holds the database), the flag writes, the
 * status updates and their webhook events commit together, so a crash before the commit leaves them pending and
 * one after leaves them done. Schedules another instance took meanwhile are skipped, and so are unapproved ones
 * where the environment requires approval (turned on since they were found). A schedule whose creator may no longer
 * write flags in the project (removed, made a viewer, a deleted key) fails. Each change is recorded under its
 * own schedule's audit context (`scheduleAudit`). Resolves how many it settled.
 */
export async function claimAndApply(runtime: ServiceRuntime, batch: readonly DueSchedule[]): Promise<number> {
  const [first] = batch
  if (!first) return 0
  return runtime.write(async (trx, flags) => {
    const claimed = await claim(
      trx,
      runtime.db.config.dialect,
      batch.map((s) => s.id),
    )
    const approval = claimed.length > 0 && (await requiresApproval(trx, first.environment_id))
    const rows = approval ? claimed.filter((r) => r.approved_at !== null) : claimed
    if (rows.length === 0) return 0
    const env = (await trx('flagsync_environments').where('id', first.environment_id).first('project_id', 'name')) as {
      project_id: string
      name: string
    }
    const target = { id: first.environment_id, projectId: env.project_id, name: env.name }
    await prefetch(flags, target.id, rows)
    const now = runtime.clock()
    const settled: ScheduleRow[] = []
    const mayWrite = creatorCheck(trx, env.project_id)
    for (const row of rows) {
      const result = (await mayWrite(row))
        ? await flags.withAudit(scheduleAudit(row), () => applyOne(flags, target, row, now))
        : creatorRefused(row, Math.max(0, now - Number(row.run_at)))
      const status = 'changed' in result ? ('applied' as const) : ('failed' as const)
      settled.push({ ...row, status, applied_at: now, result: JSON.stringify(result) })
    }
    await settle(trx, settled, now)
    await emitScheduleOutcomes(trx, settled, env.project_id, now)
    return rows.length
  })
}

/** The schedules of `ids` still pending, locked for this transaction (PostgreSQL skips rows another one holds). */
async function claim(trx: Knex.Transaction, dialect: string, ids: number[]): Promise<ScheduleRow[]> {
  const query = trx(SCHEDULES_TABLE).whereIn('id', ids).where('status', 'pending').orderBy('id').select('*')
  if (dialect === 'postgres') query.forUpdate().skipLocked()
  return (await query) as ScheduleRow[]
}

/** The batch's flags and their states at the schedules' bases, read in bulk: the write path then reads none. */
async function prefetch(flags: FlagWriter, environmentId: string, rows: readonly ScheduleRow[]): Promise<void> {
  await flags.load(
    rows.map((r) => r.flag_key),
    environmentId,
  )
  const bases = rows.filter((r) => r.base_revision !== null)
  await flags.statesAt(
    bases.map((r) => [r.flag_key, Number(r.base_revision)] as [string, number]),
    environmentId,
  )
}

/** Every schedule of the batch marked applied or failed with its result, in one statement. */
async function settle(trx: Knex.Transaction, rows: readonly ScheduleRow[], now: number): Promise<void> {
  const byId = `case id ${rows.map(() => 'when ? then ?').join(' ')} end`
  await trx.raw(
    `update "${SCHEDULES_TABLE}" set status = ${byId}, result = ${byId}, applied_at = ?
     where id in (${rows.map(() => '?').join(', ')})`,
    [
      ...rows.flatMap((r) => [Number(r.id), r.status]),
      ...rows.flatMap((r) => [Number(r.id), r.result]),
      now,
      ...rows.map((r) => Number(r.id)),
    ] as Knex.RawBinding[],
  )
}

/** One schedule's patch through the write path; a refusal is its `failed` result, with the route's words. */
async function applyOne(
  flags: FlagWriter,
  target: { id: string; projectId: string; name: string },
  row: ScheduleRow,
  now: number,
): Promise<ScheduleResult> {
  const lateMs = Math.max(0, now - Number(row.run_at))
  try {
    const patch = JSON.parse(row.patch) as FlagPatch
    const base = row.base_revision === null ? null : Number(row.base_revision)
    return { changed: await writeScheduledPatch(flags, target, row.flag_key, patch, base), late_ms: lateMs }
  } catch (error) {
    if (!(error instanceof HttpError)) throw error
    return { reason: error.message, code: error.code, late_ms: lateMs, ...detailsOf(error) }
  }
}

function detailsOf(error: HttpError): { details?: unknown } {
  const { conflicts, issues } = error.details as { conflicts?: unknown; issues?: unknown }
  if (conflicts !== undefined) return { details: { conflicts } }
  if (issues !== undefined) return { details: { issues } }
  return {}
}
