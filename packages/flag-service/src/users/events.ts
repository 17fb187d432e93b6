import type { FlagWriter } from '@flagsync/store'
import type { Knex } from 'knex'
import { type PeopleAction, recordPeopleAudit } from './audit.js'
import type { UserRow } from './rows.js'

/**
 * The change-log scope of people changes (not an environment id, not a segment scope, so no stream serves it as
 * flags). One row per user, upserted on each change of their role, name or password; riding the change log makes
 * every instance's dashboard streams hear it the way they hear flag changes.
 */
export const PEOPLE_SCOPE = 'people'

/**
 * Records, in the transaction of the change, that a user's role, name or password changed: every dashboard stream
 * gets a `people` event `{user_id, action}` (the user list is readable by everyone, so nothing is disclosed), and
 * open dashboards re-read who is signed in and the user list. Record it before a revocation of the same write, so
 * the user's own streams hear why before they close.
 */
export function recordPeopleEvent(flags: FlagWriter, userId: number, action: PeopleAction, now: number): void {
  flags.put({ key: `user:${userId}`, user_id: userId, action, at: now }, PEOPLE_SCOPE)
}

/**
 * A user added or deleted: the audit entry keeps who they were (`{name, email, role}`), so the people activity
 * still names a deleted user, and open dashboards re-read the user list.
 */
export async function recordPersonAudit(
  trx: Knex,
  flags: FlagWriter,
  entry: { at: number; actor: number; action: 'user.created' | 'user.deleted'; user: UserRow },
): Promise<void> {
  const { id, name, email, role } = entry.user
  const details = { name, email, role }
  await recordPeopleAudit(trx, {
    at: entry.at,
    actor: entry.actor,
    action: entry.action,
    targetUserId: Number(id),
    details,
  })
  recordPeopleEvent(flags, Number(id), entry.action, entry.at)
}
