import { slugify } from '@flagsync/protocol'
import { type FormEvent, useState } from 'react'
import { api, errorText } from './api.js'
import { ConfirmDialog, Dialog } from './dialog.js'
import type { Environment } from './types.js'

/** A project's environments, in the service's order, with their colors; admins create, set approval, delete. */
export function Environments(props: {
  projectId: string
  environments: Environment[]
  canAdmin: boolean
  reason: string
  onChanged: () => Promise<void>
}) {
  const [creating, setCreating] = useState(false)
  const [deleting, setDeleting] = useState<Environment | null>(null)
  const [error, setError] = useState<string | null>(null)
  const base = `/api/projects/${props.projectId}/environments`
  const act = async (run: () => Promise<unknown>) => {
    setError(null)
    try {
      await run()
      await props.onChanged()
      return true
    } catch (e) {
      setError(errorText(e))
      return false
    }
  }
  const disabledTitle = props.canAdmin ? undefined : props.reason
  return (
    <div>
      <div className="toolbar">
        <h2>Environments</h2>
        <div className="spacer" />
        <button type="button" disabled={!props.canAdmin} title={disabledTitle} onClick={() => setCreating(true)}>
          New environment
        </button>
      </div>
      {!props.canAdmin ? <p className="hint">Changing environments {props.reason}.</p> : null}
      {error ? (
        <p role="alert" className="error">
          {error}
        </p>
      ) : null}
      <ul className="environments">
        {props.environments.map((env) => (
          <li key={env.id} data-env={env.slug}>
            <span className="swatch" aria-hidden="true" ref={(el) => el?.style.setProperty('background', env.color)} />
            <span className="env-name">{env.name}</span>
            <code>{env.slug}</code>
            {env.is_default ? <span className="badge">default</span> : null}
            <label className="inline">
              <input
                type="checkbox"
                aria-label={`${env.name} requires approval`}
                checked={env.require_approval}
                disabled={!props.canAdmin}
                title={disabledTitle}
                onChange={(e) =>
                  void act(() =>
                    api('POST', `${base}/${env.id}/require-approval`, { require_approval: e.target.checked }),
                  )
                }
              />
              Require approval
            </label>
            <button
              type="button"
              disabled={!props.canAdmin || env.is_default}
              title={env.is_default ? 'already the default' : disabledTitle}
              onClick={() => void act(() => api('POST', `${base}/${env.id}/default`))}
            >
              Make default
            </button>
            <button
              type="button"
              className="danger"
              disabled={!props.canAdmin || env.is_default}
              title={env.is_default ? 'the default environment cannot be deleted' : disabledTitle}
              onClick={() => setDeleting(env)}
              aria-label={`Delete ${env.name}`}
            >
              Delete
            </button>
          </li>
        ))}
      </ul>
      <p className="hint">The order is the service's (creation order); it has no route to reorder environments yet.</p>
      {creating ? (
        <CreateEnvironment
          base={base}
          onClose={() => setCreating(false)}
          onCreated={async () => {
            setCreating(false)
            await props.onChanged()
          }}
        />
      ) : null}
      {deleting ? (
        <ConfirmDialog
          title={`Delete environment ${deleting.name}?`}
          confirm={`Delete ${deleting.name}`}
          error={error}
          onClose={() => setDeleting(null)}
          onConfirm={async () => {
            if (await act(() => api('DELETE', `${base}/${deleting.id}`))) setDeleting(null)
          }}
        >
          <p>
            Every flag of <strong>{deleting.name}</strong> goes with it (SDKs of this environment see them deleted), as
            do its SDK keys, change requests and impressions.
          </p>
        </ConfirmDialog>
      ) : null}
    </div>
  )
}

function CreateEnvironment(props: { base: string; onClose: () => void; onCreated: () => Promise<void> }) {
  const [name, setName] = useState('')
  const [slug, setSlug] = useState<string | null>(null)
  const [color, setColor] = useState('#6366f1')
  const [error, setError] = useState<string | null>(null)
  // Derived with the service's own slug rule until the person types one.
  const effectiveSlug = slug ?? slugify(name)
  async function submit(event: FormEvent) {
    event.preventDefault()
    try {
      await api('POST', props.base, { name, slug: effectiveSlug, color })
      await props.onCreated()
    } catch (e) {
      setError(errorText(e))
    }
  }
  return (
    <Dialog title="New environment" onClose={props.onClose}>
      <form onSubmit={submit}>
        <label>
          Name
          <input required maxLength={100} value={name} onChange={(e) => setName(e.target.value)} />
        </label>
        <label>
          Slug
          <input
            required
            pattern="[a-z0-9\-]+"
            maxLength={64}
            value={effectiveSlug}
            onChange={(e) => setSlug(e.target.value)}
            aria-describedby="slug-hint"
          />
        </label>
        <p className="hint" id="slug-hint">
          Derived from the name; lowercase letters, digits and hyphens.
        </p>
        <label>
          Color
          <input type="color" value={color} onChange={(e) => setColor(e.target.value)} />
        </label>
        {error ? (
          <p role="alert" className="error">
            {error}
          </p>
        ) : null}
        <div className="actions">
          <button type="button" onClick={props.onClose}>
            Cancel
          </button>
          <button type="submit" className="primary">
            Create environment
          </button>
        </div>
      </form>
    </Dialog>
  )
}
