import { slugify } from '@flagsync/protocol'
import { useState } from 'react'
import { api, errorText } from './api.js'
import { ConfirmDialog, FormDialog } from './dialog.js'
import type { Environment } from './types.js'

/** The ids in order after moving one by `by` (-1 up, +1 down); unchanged at either end. */
export function moved(ids: readonly string[], id: string, by: -1 | 1): string[] {
  const from = ids.indexOf(id)
  const to = from + by
  if (from < 0 || to < 0 || to >= ids.length) return [...ids]
  const next = [...ids]
  next.splice(from, 1)
  next.splice(to, 0, id)
  return next
}

/**
 * A project's environments, in the service's order, with their colors; admins create, reorder (move up/down
 * buttons, so the keyboard can do it: `PUT …/environments/order`), set approval, make default, delete.
 */
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
  const move = async (env: Environment, by: -1 | 1, button: HTMLButtonElement) => {
    const ids = moved(
      props.environments.map((e) => e.id),
      env.id,
      by,
    )
    if (await act(() => api('PUT', `${base}/order`, { environment_ids: ids }))) {
      // The row moved (its buttons with it): keep the keyboard on this button, or on its twin at an end.
      // After React has rendered the new order (the move can disable this button).
      setTimeout(() => {
        const twin = button.parentElement?.querySelector<HTMLButtonElement>('button:not(:disabled)')
        ;(button.disabled ? twin : button)?.focus()
      }, 0)
    }
  }
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
        {props.environments.map((env, index) => (
          <li key={env.id} data-env={env.slug}>
            <span className="move">
              <button
                type="button"
                className="ghost"
                aria-label={`Move ${env.name} up`}
                disabled={!props.canAdmin || index === 0}
                title={index === 0 ? 'already first' : disabledTitle}
                onClick={(e) => void move(env, -1, e.currentTarget)}
              >
                ↑
              </button>
              <button
                type="button"
                className="ghost"
                aria-label={`Move ${env.name} down`}
                disabled={!props.canAdmin || index === props.environments.length - 1}
                title={index === props.environments.length - 1 ? 'already last' : disabledTitle}
                onClick={(e) => void move(env, 1, e.currentTarget)}
              >
                ↓
              </button>
            </span>
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
      <p className="hint">The order here is the order of the flag table's columns, for everyone in the project.</p>
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
  // Derived with the service's own slug rule until the person types one.
  const effectiveSlug = slug ?? slugify(name)
  return (
    <FormDialog
      title="New environment"
      submit="Create environment"
      onClose={props.onClose}
      onSubmit={async () => {
        await api('POST', props.base, { name, slug: effectiveSlug, color })
        await props.onCreated()
      }}
    >
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
    </FormDialog>
  )
}
