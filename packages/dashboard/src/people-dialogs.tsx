import { useState } from 'react'
import { api } from './api.js'
import { ConfirmDialog, FormDialog } from './dialog.js'
import { queryKeys } from './query-keys.js'
import type { Role } from './types.js'
import { useServiceWrite } from './use-projects.js'
import type { User } from './use-users.js'

export const ROLES: readonly Role[] = ['viewer', 'editor', 'admin']

/** What adding, changing or deleting a user refreshes: the list, the people activity, and who is signed in. */
const PEOPLE_KEYS = [queryKeys.users(), queryKeys.peopleAudit(), queryKeys.me()]

/** `PATCH /api/users/:id`: a new role and/or name; the service refuses taking the last admin's role (409). */
export function useUserUpdate() {
  return useServiceWrite(
    (input: { id: number; role?: Role; name?: string }) =>
      api<User>('PATCH', `/api/users/${input.id}`, { role: input.role, name: input.name }),
    PEOPLE_KEYS,
  )
}

export function RenameUser(props: { user: User; onClose: () => void }) {
  const update = useUserUpdate()
  const [name, setName] = useState(props.user.name)
  return (
    <FormDialog
      title={`Rename ${props.user.email}`}
      submit="Save name"
      onClose={props.onClose}
      onSubmit={async () => {
        await update.mutateAsync({ id: props.user.id, name })
        props.onClose()
      }}
    >
      <label>
        Name
        <input required maxLength={100} value={name} onChange={(e) => setName(e.target.value)} />
      </label>
    </FormDialog>
  )
}

/** An admin sets a user's password; the user is signed out everywhere at once (sessions and tokens end). */
export function ResetPassword(props: { user: User; onClose: () => void; onDone: (user: User) => void }) {
  const { user } = props
  const reset = useServiceWrite(
    (password: string) => api('POST', `/api/users/${user.id}/password`, { password }),
    [queryKeys.peopleAudit()],
  )
  const [password, setPassword] = useState('')
  const [confirm, setConfirm] = useState('')
  const mismatch = confirm !== '' && confirm !== password
  return (
    <FormDialog
      title={`Reset password for ${user.email}`}
      submit="Reset password"
      disabled={password === '' || confirm !== password}
      onClose={props.onClose}
      onSubmit={async () => {
        await reset.mutateAsync(password)
        props.onDone(user)
        props.onClose()
      }}
    >
      <p id="reset-effect">
        <strong>{user.name}</strong> is signed out everywhere at once: every session and personal access token of theirs
        ends, and open dashboards go to the sign-in page. If wrong passwords locked them out, they can sign in again at
        once. Give them the new password.
      </p>
      <label>
        New password
        <input
          required
          type="password"
          autoComplete="new-password"
          minLength={8}
          aria-describedby="reset-effect"
          value={password}
          onChange={(e) => setPassword(e.target.value)}
        />
      </label>
      <label>
        Confirm new password
        <input
          required
          type="password"
          autoComplete="new-password"
          aria-invalid={mismatch || undefined}
          value={confirm}
          onChange={(e) => setConfirm(e.target.value)}
        />
      </label>
      <p className="hint">{mismatch ? 'The passwords do not match.' : 'At least 8 characters.'}</p>
    </FormDialog>
  )
}

export function DeleteUser(props: { user: User; onClose: () => void }) {
  const { user } = props
  const remove = useServiceWrite(() => api('DELETE', `/api/users/${user.id}`), PEOPLE_KEYS)
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

export function CreateUser(props: { onClose: () => void }) {
  const create = useServiceWrite((body: NewUser) => api('POST', '/api/users', body), PEOPLE_KEYS)
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
