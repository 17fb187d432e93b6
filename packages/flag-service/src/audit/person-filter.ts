import { HttpError } from '@flagsync/server-kit'
import type { Knex } from 'knex'
import { CHANGE_REQUESTS_TABLE } from '../change-requests/tables.js'
import { SCHEDULES_TABLE } from '../schedules/tables.js'
import { SERVICE_TABLES } from '../tables.js'

/** Someone the trail names, as each column holds them (see `actorOf`). */
export interface Person {
  /** The audit trail's `actor`: a user's email, or a name as the trail shows it. */
  name: string
  /** A user's writes with a personal access token: `<email> (token "…")`. */
  tokenPrefix: string | null
  /** A change request's `requested_by`, a schedule's `approved_by`: the email, or the name itself. */
  label: string
}

/**
 * `?actor=`: a user id (`12`) or a name. A user's email reads as that user; any other name (an SDK key as the
 * trail shows it, a removed user's email) matches entries whose actor, requester or approver is that name (an
 * SDK key's requests by its display prefix).
 */
export async function personOf(knex: Knex, actor: string): Promise<Person> {
  const byId = /^\d{1,15}$/.test(actor)
  const user = (await knex(SERVICE_TABLES.users)
    .where(byId ? 'id' : 'email', byId ? Number(actor) : actor)
    .first('email')) as { email: string } | undefined
  if (user) return { name: user.email, tokenPrefix: `${user.email} (token `, label: user.email }
  if (byId) {
    const message = `no user with id ${actor}`
    throw new HttpError('validation_failed', `invalid query: actor: ${message}`, {
      issues: [{ path: 'actor', message }],
    })
  }
  // An SDK key files requests under its display prefix: `SDK key "ci" (sk_live_ab12)` → `sk_live_ab12`.
  const keyPrefix = SDK_KEY_NAME.exec(actor)?.[1]
  return { name: actor, tokenPrefix: null, label: keyPrefix ?? actor }
}

/** The trail's name of an SDK key (see `actorOf`): its name and display prefix. */
const SDK_KEY_NAME = /^SDK key ".*" \(([^()]+)\)$/s

/**
 * The change-log condition for a person's entries: they made the change (with any of their tokens), filed the
 * change request that applied it, or approved the schedule that did (a schedule's creator is its actor).
 */
export function personWhere(knex: Knex, person: Person): (q: Knex.QueryBuilder) => void {
  return (q) => {
    q.where('c.actor', person.name)
    if (person.tokenPrefix !== null) {
      // substr rather than LIKE: an email's `_` would be a wildcard. Both dialects count characters (code points).
      const length = [...person.tokenPrefix].length
      q.orWhereRaw('substr(c.actor, 1, ?) = ?', [length, person.tokenPrefix])
    }
    q.orWhereIn(
      'c.source',
      knex(CHANGE_REQUESTS_TABLE)
        .where('requested_by', person.label)
        .select(knex.raw(`'change-request:' || cast(id as varchar(20))`)),
    )
    q.orWhereIn(
      'c.source',
      knex(SCHEDULES_TABLE)
        .where('approved_by', person.label)
        .select(knex.raw(`'schedule:' || cast(id as varchar(20)) || ' approved by ' || approved_by_actor`)),
    )
  }
}
