import { type FormEvent, useState } from 'react'
import { api, errorText } from './api.js'
import { ConfirmDialog } from './dialog.js'
import { EnvironmentSelect } from './environment-select.js'
import { ErrorLine } from './error-line.js'
import { ListTable, RowAction } from './list-table.js'
import { SecretNotice } from './projects.js'
import { queryKeys } from './query-keys.js'
import type { Environment, Member, Role, SdkKey } from './types.js'
import { useMembers, useSdkKeys, useServiceWrite } from './use-projects.js'
import { type User, useUsers } from './use-users.js'

const NO_KEYS: SdkKey[] = []

/** SDK keys of a project: create (the full key is shown once), revoke after a confirmation. Project admins only. */
export function SdkKeys(props: { projectId: string; environments: Environment[]; canAdmin: boolean; reason: string }) {
  const base = `/api/projects/${props.projectId}/keys`
  const keysQuery = useSdkKeys(props.projectId)
  const keys = keysQuery.data ?? NO_KEYS
  const refresh = [queryKeys.sdkKeys(props.projectId)]
  const create = useServiceWrite((input: NewKey) => api<SdkKey>('POST', base, input), refresh)
  const revoke = useServiceWrite((id: number) => api('DELETE', `${base}/${id}`), refresh)
  const [created, setCreated] = useState<SdkKey | null>(null)
  const [revoking, setRevoking] = useState<SdkKey | null>(null)
  const blocked = props.canAdmin ? null : props.reason
  return (
    <div>
      <h2>SDK keys</h2>
      {!props.canAdmin ? <p className="hint">Creating and revoking keys {props.reason}.</p> : null}
      <ErrorLine errors={[keysQuery.error]} />
      <CreateSdkKey
        environments={props.environments}
        blocked={blocked}
        create={async (input) => {
          setCreated(await create.mutateAsync(input))
        }}
      />
      {created?.key ? (
        <SecretNotice value={created.key} label="New SDK key" onDismiss={() => setCreated(null)}>
          Key <strong>{created.name}</strong> for {created.environment_name}
        </SecretNotice>
      ) : null}
      <ListTable columns={['Name', 'Kind', 'Environment', 'Key', 'Created']}>
        {keys.map((k) => (
          <tr key={k.id} data-key={k.name}>
            <td>{k.name}</td>
            <td>{k.kind}</td>
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
            await revoke.mutateAsync(revoking.id)
            setRevoking(null)
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

interface NewKey {
  name: string
  environment_id: string | undefined
  kind: SdkKey['kind']
}

/** The create form (name, environment; `blocked`: why it is off) and what the service said against it. */
function CreateSdkKey(props: {
  environments: Environment[]
  blocked: string | null
  create: (input: NewKey) => Promise<void>
}) {
  const [name, setName] = useState('')
  const [envId, setEnvId] = useState('')
  const [kind, setKind] = useState<SdkKey['kind']>('server')
  const [error, setError] = useState<string | null>(null)
  async function create(event: FormEvent) {
    event.preventDefault()
    setError(null)
    try {
      await props.create({ name, environment_id: envId || props.environments[0]?.id, kind })
      setName('')
    } catch (e) {
      setError(errorText(e))
    }
  }
  return (
    <>
      <form className="row" onSubmit={create}>
        <fieldset disabled={props.blocked !== null} className="row bare">
          <label>
            Key name
            <input required maxLength={100} value={name} onChange={(e) => setName(e.target.value)} />
          </label>
          <EnvironmentSelect label="Environment" value={envId} environments={props.environments} onChange={setEnvId} />
          <label>
            Kind
            <select value={kind} onChange={(e) => setKind(e.target.value as SdkKey['kind'])}>
              <option value="server">Server (sk_live_…: full access, keep it secret)</option>
              <option value="client">Client (pk_live_…: evaluate and report only, may be in a page)</option>
            </select>
          </label>
          <button type="submit" title={props.blocked ?? undefined}>
            Create key
          </button>
        </fieldset>
      </form>
      {error ? (
        <p role="alert" className="error">
          {error}
        </p>
      ) : null}
    </>
  )
}

const NO_MEMBERS: Member[] = []
const NO_USERS: User[] = []

/**
 * A project's members and the workspace's users (those not yet members can
 * be added): the same queries the project page and the Users page read.
 * `act` runs an admin change, then both are read again; a failure is `error`.
 */
function useMemberAdmin(projectId: string) {
  const members = useMembers(projectId)
  const users = useUsers()
  const act = useServiceWrite((run: () => Promise<unknown>) => run(), [queryKeys.members(projectId), queryKeys.users()])
  const list = members.data ?? NO_MEMBERS
  const candidates = (users.data ?? NO_USERS).filter((u) => !list.some((m) => m.user_id === u.id))
  return { members: list, candidates, errors: [members.error, users.error, act.error], act: act.mutate }
}

/** Members and their project roles. Project admins add, change and remove; everyone else reads. */
export function Members(props: { projectId: string; canAdmin: boolean; reason: string }) {
  const base = `/api/projects/${props.projectId}/members`
  const { members, candidates, errors, act } = useMemberAdmin(props.projectId)
  const blocked = props.canAdmin ? null : props.reason
  return (
    <div>
      <h2>Members</h2>
      {!props.canAdmin ? <p className="hint">Changing members {props.reason}.</p> : null}
      <ErrorLine errors={errors} />
      <AddMember
        candidates={candidates}
        disabled={!props.canAdmin || candidates.length === 0}
        onAdd={(userId, role) => act(() => api('POST', base, { user_id: userId, role }))}
      />
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
                onChange={(e) => {
                  // Read now: the write runs after React has put the controlled select back to the stored role.
                  const role = e.target.value
                  act(() => api('PATCH', `${base}/${m.user_id}`, { role }))
                }}
              >
                <RoleOptions />
              </select>
            </td>
            <td>
              <RowAction
                label={`Remove ${m.email}`}
                blocked={blocked}
                onClick={() => act(() => api('DELETE', `${base}/${m.user_id}`))}
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

function RoleOptions() {
  return (
    <>
      <option value="viewer">viewer</option>
      <option value="editor">editor</option>
      <option value="admin">admin</option>
    </>
  )
}

/** Adds one of the users who are not members yet (the first one unless another is chosen) with a role. */
function AddMember(props: { candidates: User[]; disabled: boolean; onAdd: (userId: number, role: Role) => void }) {
  const [userId, setUserId] = useState('')
  const [role, setRole] = useState<Role>('viewer')
  return (
    <form
      className="row"
      onSubmit={(e) => {
        e.preventDefault()
        props.onAdd(Number(userId || props.candidates[0]?.id), role)
      }}
    >
      <fieldset disabled={props.disabled} className="row bare">
        <label>
          User
          <select value={userId} onChange={(e) => setUserId(e.target.value)}>
            {props.candidates.map((u) => (
              <option key={u.id} value={u.id}>
                {u.name} ({u.email})
              </option>
            ))}
          </select>
        </label>
        <label>
          Role
          <select value={role} onChange={(e) => setRole(e.target.value as Role)}>
            <RoleOptions />
          </select>
        </label>
        <button type="submit">Add member</button>
      </fieldset>
    </form>
  )
}
