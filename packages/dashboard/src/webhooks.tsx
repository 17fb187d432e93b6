import { WEBHOOK_EVENT_TYPES } from '@flagsync/protocol'
import { useState } from 'react'
import { errorText } from './api.js'
import { ConfirmDialog, FormDialog } from './dialog.js'
import { ListTable, RowAction } from './list-table.js'
import { SecretNotice } from './projects.js'
import { useDeliveries, useWebhooks, type Webhook } from './use-webhooks.js'

/**
 * A project's outbound webhooks: create (the signing secret is shown once),
 * enable or disable, delete, and each webhook's deliveries with a test ping
 * and redelivery. Project admins only: the service refuses everyone else.
 */
export function Webhooks(props: { projectId: string; canAdmin: boolean; reason: string }) {
  const { list, create, update, remove } = useWebhooks(props.projectId, props.canAdmin)
  const [creating, setCreating] = useState(false)
  const [secret, setSecret] = useState<Webhook | null>(null)
  const [deleting, setDeleting] = useState<Webhook | null>(null)
  const [open, setOpen] = useState<string | null>(null)
  if (!props.canAdmin) {
    return (
      <div>
        <h2>Webhooks</h2>
        <p className="hint">Webhooks {props.reason}.</p>
      </div>
    )
  }
  const hooks = list.data ?? []
  const failed = list.error ?? update.error ?? remove.error
  return (
    <div>
      <h2>Webhooks</h2>
      <p className="hint">
        Each event is POSTed to the URL, signed per Standard Webhooks (<code>webhook-id</code>,{' '}
        <code>webhook-timestamp</code>, <code>webhook-signature</code>); verify it with the secret.
      </p>
      <button type="button" onClick={() => setCreating(true)}>
        New webhook
      </button>
      {failed ? (
        <p role="alert" className="error">
          {errorText(failed)}
        </p>
      ) : null}
      {secret?.secret ? (
        <SecretNotice value={secret.secret} label="Webhook signing secret" onDismiss={() => setSecret(null)}>
          Signing secret of <strong>{secret.url}</strong>
        </SecretNotice>
      ) : null}
      <div className="table-wrap">
        <ListTable columns={['URL', 'Events', 'State', 'Controls']}>
          {hooks.map((hook) => (
            <WebhookRow
              key={hook.id}
              hook={hook}
              open={open === hook.id}
              onToggle={() => update.mutate({ id: hook.id, enabled: !hook.enabled })}
              onOpen={() => setOpen(open === hook.id ? null : hook.id)}
              onDelete={() => setDeleting(hook)}
            />
          ))}
        </ListTable>
      </div>
      {open ? <Deliveries projectId={props.projectId} webhook={hooks.find((h) => h.id === open)} /> : null}
      {creating ? (
        <CreateWebhook
          onClose={() => setCreating(false)}
          onCreate={async (input) => {
            setSecret(await create.mutateAsync(input))
            setCreating(false)
          }}
        />
      ) : null}
      {deleting ? (
        <DeleteWebhook
          hook={deleting}
          onClose={() => setDeleting(null)}
          onConfirm={async () => {
            await remove.mutateAsync(deleting.id)
            if (open === deleting.id) setOpen(null)
            setDeleting(null)
          }}
        />
      ) : null}
    </div>
  )
}

function WebhookRow(props: {
  hook: Webhook
  open: boolean
  onToggle: () => void
  onOpen: () => void
  onDelete: () => void
}) {
  const { hook } = props
  return (
    <tr data-webhook={hook.url}>
      <td>
        <code>{hook.url}</code>
        {hook.description ? <div className="hint">{hook.description}</div> : null}
      </td>
      <td>{hook.events.join(', ')}</td>
      <td>
        <WebhookState hook={hook} />
      </td>
      <td>
        <button type="button" onClick={props.onToggle}>
          {hook.enabled ? 'Disable' : 'Enable'}
        </button>{' '}
        <button type="button" onClick={props.onOpen}>
          {props.open ? 'Hide deliveries' : 'Deliveries'}
        </button>
      </td>
      <td>
        <RowAction label={`Delete webhook ${hook.url}`} blocked={null} onClick={props.onDelete}>
          Delete
        </RowAction>
      </td>
    </tr>
  )
}

/**
 * Enabled, failing (its attempts fail; the service disables it once that lasts WEBHOOK_DISABLE_AFTER_MS), or
 * disabled with the reason: by an admin, a 410 from the target, or failing too long.
 */
function WebhookState({ hook }: { hook: Webhook }) {
  if (!hook.enabled) {
    return (
      <>
        <span className="badge warn">disabled</span>
        {hook.disabled_reason ? <div className="hint">{hook.disabled_reason}</div> : null}
      </>
    )
  }
  if (hook.failing_since === null) return <>enabled</>
  return (
    <>
      <span className="badge warn">failing</span>
      <div className="hint">
        deliveries failing since {new Date(hook.failing_since).toLocaleString()}; it is disabled if this goes on
      </div>
    </>
  )
}

function DeleteWebhook(props: { hook: Webhook; onClose: () => void; onConfirm: () => Promise<void> }) {
  return (
    <ConfirmDialog
      title="Delete this webhook?"
      confirm="Delete webhook"
      onClose={props.onClose}
      onConfirm={props.onConfirm}
    >
      <p>
        <code>{props.hook.url}</code> gets no more events, and its delivery log is deleted with it.
      </p>
    </ConfirmDialog>
  )
}

function CreateWebhook(props: {
  onClose: () => void
  onCreate: (input: { url: string; events: string[]; description?: string }) => Promise<void>
}) {
  const [url, setUrl] = useState('https://')
  const [description, setDescription] = useState('')
  const [all, setAll] = useState(true)
  const [events, setEvents] = useState<string[]>([])
  const toggle = (type: string) =>
    setEvents((now) => (now.includes(type) ? now.filter((t) => t !== type) : [...now, type]))
  return (
    <FormDialog
      title="New webhook"
      submit="Create webhook"
      onClose={props.onClose}
      onSubmit={() => props.onCreate({ url, events: all ? ['*'] : events, ...(description ? { description } : {}) })}
    >
      <label>
        URL
        <input required type="url" maxLength={2048} value={url} onChange={(e) => setUrl(e.target.value)} />
      </label>
      <label>
        Description
        <input maxLength={500} value={description} onChange={(e) => setDescription(e.target.value)} />
      </label>
      <label>
        <input type="checkbox" checked={all} onChange={(e) => setAll(e.target.checked)} /> Every event
      </label>
      {all ? null : (
        <fieldset>
          <legend>Events</legend>
          {WEBHOOK_EVENT_TYPES.map((type) => (
            <label key={type}>
              <input type="checkbox" checked={events.includes(type)} onChange={() => toggle(type)} /> {type}
            </label>
          ))}
        </fieldset>
      )}
    </FormDialog>
  )
}

function Deliveries(props: { projectId: string; webhook: Webhook | undefined }) {
  const { webhook } = props
  const { list, test, redeliver } = useDeliveries(props.projectId, webhook?.id ?? '')
  if (!webhook) return null
  const rows = list.data?.deliveries ?? []
  const failed = test.error ?? redeliver.error ?? list.error
  return (
    <section aria-label={`Deliveries of ${webhook.url}`}>
      <h3>Deliveries of {webhook.url}</h3>
      <button type="button" disabled={!webhook.enabled} onClick={() => test.mutate()}>
        Send test event
      </button>
      {failed ? (
        <p role="alert" className="error">
          {errorText(failed)}
        </p>
      ) : null}
      <div className="table-wrap">
        <ListTable columns={['Event', 'Status', 'Attempts', 'Last answer', 'Last attempt', 'webhook-id']}>
          {rows.map((d) => (
            <tr key={d.id} data-delivery={d.id}>
              <td>{d.event_type}</td>
              <td>{d.status}</td>
              <td>{d.attempts}</td>
              <td>{d.last_status ?? d.last_error ?? '—'}</td>
              <td>{d.last_attempt_at ? new Date(d.last_attempt_at).toLocaleString() : '—'}</td>
              <td>
                <code>{d.id}</code>
              </td>
              <td>
                <button
                  type="button"
                  disabled={!webhook.enabled}
                  aria-label={`Redeliver ${d.id}`}
                  onClick={() => redeliver.mutate(d.id)}
                >
                  Redeliver
                </button>
              </td>
            </tr>
          ))}
        </ListTable>
      </div>
    </section>
  )
}
