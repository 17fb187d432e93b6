import { type FormEvent, useCallback, useEffect, useState } from 'react'
import { api, errorText } from './api.js'
import { ConfirmDialog } from './dialog.js'
import { ListTable, RowAction } from './list-table.js'
import { SecretNotice } from './projects.js'
import type { Environment, Member, Role, SdkKey } from './types.js'

interface User {
  id: number
  name: string
  email: string
  role: Role
}

/** SDK keys of a project: create (the full key is shown once), revoke after a confirmation. Project admins only. */
export function SdkKeys(props: { projectId: string; environments: Environment[]; canAdmin: boolean; reason: string }) {
  const [keys, setKeys] = useState<SdkKey[]>([])
  const [created, setCreated] = useState<SdkKey | null>(null)
  const [revoking, setRevoking] = useState<SdkKey | null>(null)
  const [name, setName] = useState('')
  const [envId, setEnvId] = useState('')
  const [error, setError] = useState<string | null>(null)
  const blocked = props.canAdmin ? null : props.reason
  const base = `/api/projects/${props.projectId}/keys`
  const load = useCallback(async () => setKeys(await api<SdkKey[]>('GET', base).catch(() => [])), [base])
  useEffect(() => {
    void load()
  }, [load])

  async function create(event: FormEvent) {
    event.preventDefault()
    setError(null)
    try {
      const key = await api<SdkKey>('POST', base, { name, environment_id: envId || props.environments[0]?.id })
      setCreated(key)
      setName('')
      await load()
    } catch (e) {
      setError(errorText(e))
    }
  }

  return (
    <div>
      <h2>SDK keys</h2>
      {!props.canAdmin ? <p className="hint">Creating and revoking keys {props.reason}.</p> : null}
      <form className="row" onSubmit={create}>
        <fieldset disabled={!props.canAdmin} className="row bare">
          <label>
            Key name
            <input required maxLength={100} value={name} onChange={(e) => setName(e.target.value)} />
          </label>
          <label>
            Environment
            <select value={envId} onChange={(e) => setEnvId(e.target.value)}>
              {props.environments.map((e) => (
                <option key={e.id} value={e.id}>
                  {e.name}
                </option>
              ))}
            </select>
          </label>
          <button type="submit" title={blocked ?? undefined}>
            Create key
          </button>
        </fieldset>
      </form>
      {error ? (
        <p role="alert" className="error">
          {error}
        </p>
      ) : null}
      {created?.key ? (
        <SecretNotice value={created.key} label="New SDK key" onDismiss={() => setCreated(null)}>
          Key <strong>{created.name}</strong> for {created.environment_name}
        </SecretNotice>
      ) : null}
      <ListTable columns={['Name', 'Environment', 'Key', 'Created']}>
        {keys.map((k) => (
          <tr key={k.id} data-key={k.name}>
            <td>{k.name}</td>
            <td>{k.environment_name}</td>
            <td>
              <code>{k.prefix}</code>
            </td>
            <td>{new Date(k.created_at).toLocaleDateString()}</td>
            <td>
              <RowAction label={`Revoke ${k.name}`} blocked={blocked} onClick={() => setRevoking(k)}>
                Revoke
              </RowAction>
            </td>
          </tr>
        ))}
      </ListTable>
      {revoking ? (
        <ConfirmDialog
          title={`Revoke ${revoking.name}?`}
          confirm="Revoke key"
          onClose={() => setRevoking(null)}
          onConfirm={async () => {
            await api('DELETE', `${base}/${revoking.id}`)
            setRevoking(null)
            await load()
          }}
        >
          <p>
            Apps using <code>{revoking.prefix}</code> ({revoking.environment_name}) get 401 from now on and their
            streams close at once.
          </p>
        </ConfirmDialog>
      ) : null}
    </div>
  )
}

/** Members and their project roles. Project admins add, change and remove; everyone else reads. */
export function Members(props: { projectId: string; canAdmin: boolean; reason: string }) {
  const [members, setMembers] = useState<Member[]>([])
  const [users, setUsers] = useState<User[]>([])
  const [userId, setUserId] = useState('')
  const [role, setRole] = useState<Role>('viewer')
  const [error, setError] = useState<string | null>(null)
  const blocked = props.canAdmin ? null : props.reason
  const base = `/api/projects/${props.projectId}/members`
  const load = useCallback(async () => {
    setMembers(await api<Member[]>('GET', base).catch(() => []))
    setUsers(await api<User[]>('GET', '/api/users').catch(() => []))
  }, [base])
  useEffect(() => {
    void load()
  }, [load])
  const act = async (run: () => Promise<unknown>) => {
    setError(null)
    try {
      await run()
      await load()
    } catch (e) {
      setError(errorText(e))
    }
  }
  const candidates = users.filter((u) => !members.some((m) => m.user_id === u.id))
  return (
    <div>
      <h2>Members</h2>
      {!props.canAdmin ? <p className="hint">Changing members {props.reason}.</p> : null}
      {error ? (
        <p role="alert" className="error">
          {error}
        </p>
      ) : null}
      <form
        className="row"
        onSubmit={(e) => {
          e.preventDefault()
          void act(() => api('POST', base, { user_id: Number(userId || candidates[0]?.id), role }))
        }}
      >
        <fieldset disabled={!props.canAdmin || candidates.length === 0} className="row bare">
          <label>
            User
            <select value={userId} onChange={(e) => setUserId(e.target.value)}>
              {candidates.map((u) => (
                <option key={u.id} value={u.id}>
                  {u.name} ({u.email})
                </option>
              ))}
            </select>
          </label>
          <label>
            Role
            <select value={role} onChange={(e) => setRole(e.target.value as Role)}>
              <option value="viewer">viewer</option>
              <option value="editor">editor</option>
              <option value="admin">admin</option>
            </select>
          </label>
          <button type="submit">Add member</button>
        </fieldset>
      </form>
      <ListTable columns={['Name', 'Email', 'Project role']}>
        {members.map((m) => (
          <tr key={m.user_id} data-member={m.email}>
            <td>{m.name}</td>
            <td>{m.email}</td>
            <td>
              <select
                aria-label={`Role of ${m.email}`}
                value={m.role}
                disabled={!props.canAdmin}
                title={blocked ?? undefined}
                onChange={(e) => void act(() => api('PATCH', `${base}/${m.user_id}`, { role: e.target.value }))}
              >
                <option value="viewer">viewer</option>
                <option value="editor">editor</option>
                <option value="admin">admin</option>
              </select>
            </td>
            <td>
              <RowAction
                label={`Remove ${m.email}`}
                blocked={blocked}
                onClick={() => void act(() => api('DELETE', `${base}/${m.user_id}`))}
              >
                Remove
              </RowAction>
            </td>
          </tr>
        ))}
      </ListTable>
    </div>
  )
}
