import { withoutBidiControls } from '@flagsync/protocol'
import { useMemo } from 'react'
import { ErrorLine } from './error-line.js'
import { type PeopleAuditEntry, type User, usePeopleAudit } from './use-users.js'

const plural = (n: number, one: string) => `${n} ${one}${n === 1 ? '' : 's'}`

/**
 * One people-audit entry as a sentence; `nameOf` names a user id (a deleted user: "user #5"). Bidirectional controls
 * in a stored name (the name rule checks writes, not names already stored) are left out, so none can reorder the sentence.
 */
export function describePeopleEntry(entry: PeopleAuditEntry, nameOf: (id: number) => string): string {
  return withoutBidiControls(composeSentence(entry, nameOf))
}

function composeSentence(entry: PeopleAuditEntry, nameOf: (id: number) => string): string {
  const actor = nameOf(entry.actor)
  const target = nameOf(entry.target_user_id)
  switch (entry.action) {
    case 'user.updated': {
      const { role, name } = entry.details
      const changes = [
        role ? `changed ${name ? name.from : target}’s role from ${role.from} to ${role.to}` : null,
        name ? `renamed ${name.from} to ${name.to}` : null,
      ].filter((part) => part !== null)
      return `${actor} ${changes.join(' and ')}`
    }
    case 'user.password_reset': {
      const { sessions_ended: sessions, tokens_revoked: tokens } = entry.details
      return `${actor} reset ${target}’s password (${plural(sessions, 'session')} ended, ${plural(tokens, 'token')} revoked)`
    }
    case 'user.password_changed':
      return `${actor} changed their own password (${plural(entry.details.sessions_ended, 'other session')} ended)`
    case 'user.created':
      return `${actor} added ${entry.details.name} (${entry.details.email}) as ${entry.details.role}`
    case 'user.deleted':
      return `${actor} deleted ${entry.details.name} (${entry.details.email})`
  }
}

/** Names by user id: the users there are, then deleted users by the name their entries kept. */
function namesOf(users: readonly User[], entries: readonly PeopleAuditEntry[]): (id: number) => string {
  const names = new Map<number, string>()
  for (const e of entries) {
    if (e.action === 'user.created' || e.action === 'user.deleted') names.set(e.target_user_id, e.details.name)
  }
  for (const u of users) names.set(u.id, u.name || u.email)
  return (id) => names.get(id) ?? `user #${id}`
}

/** "People activity" for workspace admins: who added, changed or deleted whom, newest first, paged. */
export function PeopleActivity(props: { users: readonly User[] }) {
  const query = usePeopleAudit(true)
  const entries = useMemo(() => query.data?.pages.flatMap((p) => p.entries) ?? [], [query.data])
  const nameOf = useMemo(() => namesOf(props.users, entries), [props.users, entries])
  return (
    <section aria-labelledby="people-activity-title" className="history">
      <h2 id="people-activity-title">People activity</h2>
      <ErrorLine errors={[query.error]} />
      {query.isSuccess && entries.length === 0 ? (
        <p className="hint">No people added, changed or deleted yet.</p>
      ) : null}
      <ol className="people-activity">
        {entries.map((e) => (
          <li key={e.id} data-action={e.action}>
            <p>
              <strong className="sentence">{describePeopleEntry(e, nameOf)}</strong>
              <br />
              <span className="hint">
                <time dateTime={e.at}>{new Date(e.at).toLocaleString()}</time>
              </span>
            </p>
          </li>
        ))}
      </ol>
      {query.hasNextPage ? (
        <button type="button" onClick={() => query.fetchNextPage()} disabled={query.isFetchingNextPage}>
          {query.isFetchingNextPage ? 'Loading older activity…' : 'Load older activity'}
        </button>
      ) : null}
    </section>
  )
}
