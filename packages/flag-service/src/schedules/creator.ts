import type { Knex } from 'knex'
import type { Role } from '../auth/context.js'
import { userProjectRole } from '../auth/project-role.js'
import { SERVICE_TABLES } from '../tables.js'
import type { ScheduleRow } from './rows.js'

const WRITES: ReadonlySet<Role | undefined> = new Set(['editor', 'admin'])

/**
 * Whether a schedule's creator may still write flags in the project when it runs, as the PATCH route would let
 * them: a user who is still an editor or admin there, or a server key of the project that was not deleted. A
 * deleted user's schedules keep neither id (`created_by_user_id` is set null), so they may not.
 */
async function creatorMayWrite(trx: Knex, row: ScheduleRow, projectId: string): Promise<boolean> {
  if (row.created_by_user_id !== null) {
    const user = (await trx(SERVICE_TABLES.users).where('id', Number(row.created_by_user_id)).first('id', 'role')) as
      | { id: number; role: Role }
      | undefined
    return (
      user !== undefined && WRITES.has(await userProjectRole(trx, { id: Number(user.id), role: user.role }, projectId))
    )
  }
  if (row.created_by_key_id !== null) {
    const key = await trx(SERVICE_TABLES.sdkKeys)
      .where({ id: Number(row.created_by_key_id), project_id: projectId, kind: 'server' })
      .first('id')
    return key !== undefined
  }
  return false
}

/** `creatorMayWrite` for the schedules of one transaction: each creator is read once (a batch usually has one). */
export function creatorCheck(trx: Knex, projectId: string): (row: ScheduleRow) => Promise<boolean> {
  const known = new Map<string, Promise<boolean>>()
  return (row) => {
    const who = `${row.created_by_user_id}:${row.created_by_key_id}`
    let may = known.get(who)
    if (may === undefined) {
      may = creatorMayWrite(trx, row, projectId)
      known.set(who, may)
    }
    return may
  }
}

/** The `failed` result of a schedule whose creator may no longer write flags there. */
export const creatorRefused = (row: ScheduleRow, lateMs: number) => ({
  reason: `its creator (${row.created_by}) may no longer change flags in this project; nothing was changed`,
  code: 'forbidden',
  late_ms: lateMs,
})
