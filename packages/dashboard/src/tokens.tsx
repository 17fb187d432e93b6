import { type FormEvent, useState } from 'react'
import { api, errorText } from './api.js'
import { ConfirmDialog } from './dialog.js'
import { ErrorLine } from './error-line.js'
import { ListTable, RowAction } from './list-table.js'
import { SecretNotice } from './projects.js'
import { queryKeys } from './query-keys.js'
import { useServiceWrite } from './use-projects.js'
import { type Token, useTokens } from './use-tokens.js'

const NO_TOKENS: Token[] = []

interface NewToken {
  name: string
  scope: Token['scope']
  expires_in_days: number | null
}

/** The signed-in user's personal access tokens: create (the full token shown once), list, delete. */
export function Tokens(props: { offline: boolean }) {
  const query = useTokens()
  const tokens = query.data ?? NO_TOKENS
  const create = useServiceWrite((body: NewToken) => api<Token>('POST', '/api/tokens', body), [queryKeys.tokens()])
  const [created, setCreated] = useState<Token | null>(null)
  const [deleting, setDeleting] = useState<Token | null>(null)
  return (
    <section aria-labelledby="tokens-title">
      <h1 id="tokens-title">Personal access tokens</h1>
      <p className="hint">
        A token acts as you for scripts and CI (Authorization: Bearer pat_…); read_only ones cannot change anything.
      </p>
      {props.offline ? <p className="hint">Creating and deleting tokens needs the service (offline).</p> : null}
      <ErrorLine errors={[props.offline ? null : query.error]} />
      <CreateToken
        offline={props.offline}
        create={async (body) => {
          setCreated(await create.mutateAsync(body))
        }}
      />
      {created?.token ? (
        <SecretNotice value={created.token} label="New token" onDismiss={() => setCreated(null)}>
          Token <strong>{created.name}</strong>
        </SecretNotice>
      ) : null}
      <ListTable columns={['Name', 'Token', 'Scope', 'Expires', 'Last used']}>
        {tokens.map((t) => (
          <TokenRow key={t.id} token={t} offline={props.offline} onDelete={() => setDeleting(t)} />
        ))}
      </ListTable>
      {deleting ? <DeleteToken token={deleting} onClose={() => setDeleting(null)} /> : null}
    </section>
  )
}

/** The create form (name, scope, expiry) and what the service said against it. */
function CreateToken(props: { offline: boolean; create: (body: NewToken) => Promise<void> }) {
  const [name, setName] = useState('')
  const [scope, setScope] = useState<Token['scope']>('read_only')
  const [days, setDays] = useState('90')
  const [error, setError] = useState<string | null>(null)
  async function create(event: FormEvent) {
    event.preventDefault()
    setError(null)
    try {
      await props.create({ name, scope, expires_in_days: days === '' ? null : Number(days) })
      setName('')
    } catch (e) {
      setError(errorText(e))
    }
  }
  return (
    <>
      <form onSubmit={create}>
        <fieldset disabled={props.offline} className="row bare">
          <label>
            Token name
            <input required maxLength={100} value={name} onChange={(e) => setName(e.target.value)} />
          </label>
          <label>
            Scope
            <select value={scope} onChange={(e) => setScope(e.target.value as Token['scope'])}>
              <option value="read_only">read_only</option>
              <option value="read_write">read_write</option>
            </select>
          </label>
          <label>
            Expires in days (empty: never)
            <input inputMode="numeric" value={days} onChange={(e) => setDays(e.target.value)} />
          </label>
          <button type="submit">Create token</button>
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

function TokenRow(props: { token: Token; offline: boolean; onDelete: () => void }) {
  const { token: t } = props
  return (
    <tr data-token={t.name}>
      <td>{t.name}</td>
      <td>
        <code>{t.prefix}</code>
      </td>
      <td>{t.scope}</td>
      <td>{t.expires_at ? new Date(t.expires_at).toLocaleDateString() : 'never'}</td>
      <td>{t.last_used_at ? new Date(t.last_used_at).toLocaleString() : 'never'}</td>
      <td>
        <RowAction
          label={`Delete token ${t.name}`}
          blocked={props.offline ? 'needs the service (offline)' : null}
          onClick={props.onDelete}
        >
          Delete
        </RowAction>
      </td>
    </tr>
  )
}

function DeleteToken(props: { token: Token; onClose: () => void }) {
  const remove = useServiceWrite(() => api('DELETE', `/api/tokens/${props.token.id}`), [queryKeys.tokens()])
  return (
    <ConfirmDialog
      title={`Delete token ${props.token.name}?`}
      confirm="Delete token"
      onClose={props.onClose}
      onConfirm={async () => {
        await remove.mutateAsync(undefined)
        props.onClose()
      }}
    >
      <p>
        Scripts using <code>{props.token.prefix}</code> get 401 from now on.
      </p>
    </ConfirmDialog>
  )
}
