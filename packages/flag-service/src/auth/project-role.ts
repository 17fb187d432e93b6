import type { Knex } from 'knex'
import { SERVICE_TABLES } from '../tables.js'
import type { Role } from './context.js'

/**
 * A user's role in a project, read through `db` (the app's knex, or a write's transaction), or undefined when the
 * project is invisible to them: a workspace admin is admin in every project, member or not; a workspace editor has
 * their project role; a workspace viewer is a viewer wherever they are a member, whatever the project role says.
 */
export async function userProjectRole(
  db: Knex | Knex.Transaction,
  user: { id: number; role: Role },
  projectId: string,
): Promise<Role | undefined> {
  if (user.role === 'admin') return 'admin'
  const member = (await db(SERVICE_TABLES.members).where({ project_id: projectId, user_id: user.id }).first('role')) as
    | { role: Role }
    | undefined
  if (!member) return undefined
  return user.role === 'viewer' ? 'viewer' : member.role
}
