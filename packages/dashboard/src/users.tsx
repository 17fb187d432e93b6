import { useState } from 'react'
import { Link } from 'wouter'
import { ErrorLine } from './error-line.js'
import { ListTable, RowAction } from './list-table.js'
import { PeopleActivity } from './people-activity.js'
import { CreateUser, DeleteUser, RenameUser, ResetPassword, ROLES, useUserUpdate } from './people-dialogs.js'
import type { Me, Role } from './types.js'
import { type User, useUsers } from './use-users.js'

export type { User }

const NO_USERS: User[] = []

/**
 * Why the caller cannot delete this user, or null when they can (the flag service's users routes: workspace admins
 * create and delete; nobody deletes themselves or the last admin).
 */
export function deleteBlocked(me: Pick<Me, 'id' | 'role'>, user: User, users: readonly User[], offline: boolean) {
  if (offline) return 'needs the service (offline)'
  if (me.role !== 'admin') return 'needs the workspace admin role'
  if (user.id === me.id) return 'you cannot delete yourself'
  if (user.role === 'admin' && users.filter((u) => u.role === 'admin').length <= 1) return 'the last admin'
  return null
}

/** Why the caller cannot create users or change them (role, name, password), or null: workspace admins, online. */
export function createBlocked(me: Pick<Me, 'role'>, offline: boolean): string | null {
  if (offline) return 'needs the service (offline)'
  return me.role === 'admin' ? null : 'needs the workspace admin role'
}

type Dialog = { kind: 'create' } | { kind: 'delete' | 'rename' | 'reset'; user: User }

/**
 * Workspace users: everyone sees the list and the roles; workspace admins create users, change their role and name,
 * reset their password and delete them, and see the people activity.
 */
export function Users(props: { me: Me; offline: boolean }) {
  const query = useUsers()
  const users = query.data ?? NO_USERS
  const [dialog, setDialog] = useState<Dialog | null>(null)
  const [done, setDone] = useState<string | null>(null)
  const update = useUserUpdate()
  const manageReason = createBlocked(props.me, props.offline)
  const close = () => setDialog(null)
  const setRole = (user: User, role: Role) => {
    setDone(null)
    update.mutate({ id: user.id, role }, { onSuccess: () => setDone(`${user.name} is now ${role}.`) })
  }
  return (
    <section aria-labelledby="users-title">
      <div className="toolbar">
        <h1 id="users-title">Users</h1>
        <div className="spacer" />
        <button
          type="button"
          disabled={manageReason !== null}
          title={manageReason ?? undefined}
          onClick={() => setDialog({ kind: 'create' })}
        >
          New user
        </button>
      </div>
      {manageReason ? <p className="hint">Creating and deleting users {manageReason}.</p> : null}
      <UsersHint />
      <ErrorLine errors={[props.offline ? null : query.error, update.error]} />
      {done ? (
        <p role="status" className="notice">
          {done}
        </p>
      ) : null}
      <ListTable columns={['User', 'Workspace role']}>
        {users.map((u) => (
          <UserRow
            key={u.id}
            user={u}
            me={props.me}
            manageable={manageReason === null}
            blocked={deleteBlocked(props.me, u, users, props.offline)}
            onRole={(role) => setRole(u, role)}
            onDialog={(kind) => setDialog({ kind, user: u })}
          />
        ))}
      </ListTable>
      {manageReason === null ? <PeopleActivity users={users} /> : null}
      {dialog?.kind === 'create' ? <CreateUser onClose={close} /> : null}
      {dialog?.kind === 'delete' ? <DeleteUser user={dialog.user} onClose={close} /> : null}
      {dialog?.kind === 'rename' ? <RenameUser user={dialog.user} onClose={close} /> : null}
      {dialog?.kind === 'reset' ? (
        <ResetPassword
          user={dialog.user}
          onClose={close}
          onDone={(u) => setDone(`${u.name}’s password was reset; they were signed out everywhere.`)}
        />
      ) : null}
    </section>
  )
}

function UsersHint() {
  return (
    <p className="hint">
      A user signs in with their email and password; their projects come from memberships (a project's Members tab),
      unless their workspace role is admin. Your own <Link href="/tokens">personal access tokens</Link> act as you;
      nobody manages another user's tokens, and deleting a user deletes theirs. Change your own password on your{' '}
      <Link href="/account">account</Link> page.
    </p>
  )
}

function UserRow(props: {
  user: User
  me: Me
  manageable: boolean
  blocked: string | null
  onRole: (role: Role) => void
  onDialog: (kind: 'delete' | 'rename' | 'reset') => void
}) {
  const { user: u, manageable } = props
  const self = u.id === props.me.id
  return (
    <tr data-user={u.email}>
      <td>
        {u.name}
        {self ? <span className="badge">you</span> : null}
        <br />
        {/* One cell with the name, so the table fits 390 px; a long address breaks anywhere. */}
        <span className="hint" ref={(el) => el?.style.setProperty('overflow-wrap', 'anywhere')}>
          {u.email}
        </span>
      </td>
      <td>
        {manageable ? (
          <select
            aria-label={`Workspace role of ${u.email}`}
            value={u.role}
            onChange={(e) => props.onRole(e.target.value as Role)}
          >
            {ROLES.map((r) => (
              <option key={r} value={r}>
                {r}
              </option>
            ))}
          </select>
        ) : (
          u.role
        )}
      </td>
      <td>
        {manageable ? (
          <>
            <button type="button" aria-label={`Rename ${u.email}`} onClick={() => props.onDialog('rename')}>
              Rename
            </button>
            <button
              type="button"
              aria-label={`Reset password for ${u.email}`}
              disabled={self}
              title={self ? 'change your own on the account page' : undefined}
              onClick={() => props.onDialog('reset')}
            >
              Reset password
            </button>
          </>
        ) : null}
        <RowAction label={`Delete user ${u.email}`} blocked={props.blocked} onClick={() => props.onDialog('delete')}>
          Delete
        </RowAction>
      </td>
    </tr>
  )
}
