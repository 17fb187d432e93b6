import { useState } from 'react'
import { Link } from 'wouter'
import { api } from './api.js'
import { ConfirmDialog, FormDialog } from './dialog.js'
import { ErrorLine } from './error-line.js'
import { ListTable, RowAction } from './list-table.js'
import { queryKeys } from './query-keys.js'
import type { Me, Role } from './types.js'
import { useServiceWrite } from './use-projects.js'
import { type User, useUsers } from './use-users.js'

export type { User }

const ROLES: readonly Role[] = ['viewer', 'editor', 'admin']
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

/** Why the caller cannot create (or delete) users, or null when they can: workspace admins, online. */
export function createBlocked(me: Pick<Me, 'role'>, offline: boolean): string | null {
  if (offline) return 'needs the service (offline)'
  return me.role === 'admin' ? null : 'needs the workspace admin role'
}

/** Workspace users: everyone sees the list; workspace admins create users and delete them. */
export function Users(props: { me: Me; offline: boolean }) {
  const query = useUsers()
  const users = query.data ?? NO_USERS
  const [creating, setCreating] = useState(false)
  const [deleting, setDeleting] = useState<User | null>(null)
  const createReason = createBlocked(props.me, props.offline)
  return (
    <section aria-labelledby="users-title">
      <div className="toolbar">
        <h1 id="users-title">Users</h1>
        <div className="spacer" />
        <button
          type="button"
          disabled={createReason !== null}
          title={createReason ?? undefined}
          onClick={() => setCreating(true)}
        >
          New user
        </button>
      </div>
      {createReason ? <p className="hint">Creating and deleting users {createReason}.</p> : null}
      <UsersHint />
      <ErrorLine errors={[props.offline ? null : query.error]} />
      <ListTable columns={['User', 'Workspace role']}>
        {users.map((u) => (
          <UserRow
            key={u.id}
            user={u}
            me={props.me}
            blocked={deleteBlocked(props.me, u, users, props.offline)}
            onDelete={() => setDeleting(u)}
          />
        ))}
      </ListTable>
      {creating ? <CreateUser onClose={() => setCreating(false)} /> : null}
      {deleting ? <DeleteUser user={deleting} onClose={() => setDeleting(null)} /> : null}
    </section>
  )
}

function UsersHint() {
  return (
    <p className="hint">
      A user signs in with their email and password; their projects come from memberships (a project's Members tab),
      unless their workspace role is admin. Your own <Link href="/tokens">personal access tokens</Link> act as you;
      nobody manages another user's tokens, and deleting a user deletes theirs.
    </p>
  )
}

function UserRow(props: { user: User; me: Me; blocked: string | null; onDelete: () => void }) {
  const { user: u } = props
  return (
    <tr data-user={u.email}>
      <td>
        {u.name}
        {u.id === props.me.id ? <span className="badge">you</span> : null}
        <br />
        {/* One cell with the name, so the table fits 390 px; a long address breaks anywhere. */}
        <span className="hint" ref={(el) => el?.style.setProperty('overflow-wrap', 'anywhere')}>
          {u.email}
        </span>
      </td>
      <td>{u.role}</td>
      <td>
        <RowAction label={`Delete user ${u.email}`} blocked={props.blocked} onClick={props.onDelete}>
          Delete
        </RowAction>
      </td>
    </tr>
  )
}

function DeleteUser(props: { user: User; onClose: () => void }) {
  const { user } = props
  const remove = useServiceWrite(() => api('DELETE', `/api/users/${user.id}`), [queryKeys.users()])
  return (
    <ConfirmDialog
      title={`Delete user ${user.email}?`}
      confirm="Delete user"
      onClose={props.onClose}
      onConfirm={async () => {
        await remove.mutateAsync(undefined)
        props.onClose()
      }}
    >
      <p>
        <strong>{user.name}</strong> can no longer sign in; their sessions, personal access tokens and project
        memberships go with them, and their open streams end.
      </p>
    </ConfirmDialog>
  )
}

interface NewUser {
  name: string
  email: string
  role: Role
  password: string
}

function CreateUser(props: { onClose: () => void }) {
  const create = useServiceWrite((body: NewUser) => api('POST', '/api/users', body), [queryKeys.users()])
  const [name, setName] = useState('')
  const [email, setEmail] = useState('')
  const [role, setRole] = useState<Role>('viewer')
  const [password, setPassword] = useState('')
  return (
    <FormDialog
      title="New user"
      submit="Create user"
      onClose={props.onClose}
      onSubmit={async () => {
        await create.mutateAsync({ name, email, role, password })
        props.onClose()
      }}
    >
      <label>
        Name
        <input required maxLength={100} value={name} onChange={(e) => setName(e.target.value)} />
      </label>
      <label>
        Email
        <input
          required
          type="email"
          autoComplete="off"
          maxLength={254}
          value={email}
          onChange={(e) => setEmail(e.target.value)}
        />
      </label>
      <label>
        Workspace role
        <select value={role} onChange={(e) => setRole(e.target.value as Role)}>
          {ROLES.map((r) => (
            <option key={r} value={r}>
              {r}
            </option>
          ))}
        </select>
      </label>
      <label>
        Password
        <input
          required
          type="password"
          autoComplete="new-password"
          minLength={8}
          value={password}
          onChange={(e) => setPassword(e.target.value)}
          aria-describedby="password-hint"
        />
      </label>
      <p className="hint" id="password-hint">
        At least 8 characters. Give it to the person; they sign in with it.
      </p>
    </FormDialog>
  )
}
