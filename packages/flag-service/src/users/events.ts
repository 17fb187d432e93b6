import type { FlagWriter } from '@flagsync/store'
import type { PeopleAction } from './audit.js'

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
