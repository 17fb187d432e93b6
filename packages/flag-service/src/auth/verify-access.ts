import { HttpError } from '@flagsync/server-kit'
import type { Knex } from 'knex'
import { SERVICE_TABLES as T } from '../tables.js'
import type { AuthContext, EnvironmentAccess, ProjectAccess, Role } from './context.js'
import { roleAtLeast } from './context.js'
import { userProjectRole } from './project-role.js'

/** What a write knows of its caller: `req` itself, as `authenticate` and the project guards left it. */
export interface WriteCaller {
  auth?: AuthContext | undefined
  project?: ProjectAccess | undefined
  environment?: EnvironmentAccess | undefined
}

const revoked = (what: string) =>
  new HttpError('unauthorized', `${what} was revoked while this request ran; nothing was changed`)

const demoted = (where: string) =>
  new HttpError('forbidden', `your role ${where} was lowered while this request ran; nothing was changed`)

/**
 * Checks again, inside a write's transaction, that the caller's credential and
 * roles still stand. `authenticate` and the guards read them before the write
 * waited for the store's write lock, and a revocation (a token, an SDK key or a
 * session ended, a user deleted or demoted, a member removed or demoted) that
 * committed in that gap would otherwise let the write through, recorded under
 * a name that no longer resolves. Every revoking write takes the same lock, so
 * what this reads is final until the commit.
 *
 * 401 when the credential is gone; 403 when a role fell below the one the
 * guards accepted; 404 when the project is no longer visible (as `loadProject`
 * answers). A promotion in the gap changes nothing.
 */
export async function verifyAccess(trx: Knex.Transaction, caller: WriteCaller, now: number): Promise<void> {
  const auth = caller.auth
  if (!auth) return
  if (auth.kind === 'sdk_key') {
    if (
      !(await trx(T.sdkKeys)
        .where('id', auth.sdkKey?.id ?? 0)
        .first('id'))
    )
      throw revoked('this SDK key')
    return
  }
  if (auth.kind === 'session' && auth.sessionHash !== undefined) {
    const session = await trx(T.sessions)
      .where('id_hash', auth.sessionHash)
      .andWhere('expires_at', '>', now)
      .first('user_id')
    if (!session) throw revoked('this session')
  }
  if (auth.kind === 'pat') {
    const token = (await trx(T.tokens)
      .where('id', auth.tokenId ?? 0)
      .first('expires_at')) as { expires_at: number | string | null } | undefined
    if (!token || (token.expires_at !== null && Number(token.expires_at) <= now)) {
      throw revoked('this personal access token')
    }
  }
  const user = auth.user
  if (!user) return
  const row = (await trx(T.users).where('id', user.id).first('role')) as { role: Role } | undefined
  if (!row) throw revoked('your user')
  if (!roleAtLeast(row.role, user.role)) throw demoted('in the workspace')
  const projectId = caller.project?.id ?? caller.environment?.projectId
  const granted = caller.project?.role ?? caller.environment?.role
  if (projectId === undefined || granted === undefined) return
  const role = await userProjectRole(trx, { id: user.id, role: row.role }, projectId)
  if (role === undefined) throw new HttpError('not_found', `no project ${JSON.stringify(projectId)}`)
  if (!roleAtLeast(role, granted)) throw demoted('in this project')
}
