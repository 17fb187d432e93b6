import { HttpError } from '@flagsync/server-kit'
import type { Knex } from 'knex'
import type { Role } from '../auth/context.js'
import { SERVICE_TABLES } from '../tables.js'
import type { MemberRow } from './rows.js'

const T = SERVICE_TABLES

const membersOf = (knex: Knex, projectId: string) =>
  knex({ m: T.members })
    .join({ u: T.users }, 'u.id', 'm.user_id')
    .where('m.project_id', projectId)
    .select('m.user_id', 'u.name', 'u.email', 'm.role')

/** A project's members with their names and emails, by user id. */
export const listMembers = async (knex: Knex, projectId: string): Promise<MemberRow[]> =>
  (await membersOf(knex, projectId).orderBy('m.user_id')) as MemberRow[]

/** One member of a project (the caller has just written it, so it exists). */
export const memberRow = async (knex: Knex, projectId: string, userId: number): Promise<MemberRow> =>
  (await membersOf(knex, projectId).where('m.user_id', userId).first()) as MemberRow

/** Adds a user to a project: 422 for an unknown user, 409 when they are a member already. */
export async function insertMember(
  trx: Knex,
  input: { projectId: string; userId: number; role: Role; now: number },
): Promise<void> {
  if (!(await trx(T.users).where('id', input.userId).first('id'))) {
    throw new HttpError('validation_failed', `invalid member: user_id: no user ${input.userId}`, {
      issues: [{ path: 'user_id', message: `no user ${input.userId}` }],
    })
  }
  if (await trx(T.members).where({ project_id: input.projectId, user_id: input.userId }).first('user_id')) {
    throw new HttpError('conflict', `user ${input.userId} is already a member of this project`)
  }
  await trx(T.members).insert({
    project_id: input.projectId,
    user_id: input.userId,
    role: input.role,
    created_at: input.now,
  })
}

/** Changes a member's role; false when the user is not a member. */
export async function updateMemberRole(trx: Knex, projectId: string, userId: number, role: Role): Promise<boolean> {
  return (await trx(T.members).where({ project_id: projectId, user_id: userId }).update({ role })) > 0
}

/** Removes a member; false when the user is not a member. */
export async function deleteMember(trx: Knex, projectId: string, userId: number): Promise<boolean> {
  return (await trx(T.members).where({ project_id: projectId, user_id: userId }).delete()) > 0
}
