import { slugify } from '@flagsync/protocol'
import { useState } from 'react'
import { api, errorText } from './api.js'
import { ConfirmDialog, FormDialog } from './dialog.js'
import { queryKeys } from './query-keys.js'
import type { Environment } from './types.js'
import { useServiceWrite } from './use-projects.js'

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
 * The admin actions on a project's environments (one mutation): each runs,
 * then the project's environments are read again; a failure is `error`.
 * `move` keeps the keyboard on the button that moved the row, or on its twin at an end.
 */
function useEnvironmentActions(projectId: string, base: string, environments: Environment[]) {
  const write = useServiceWrite((run: () => Promise<unknown>) => run(), [queryKeys.environments(projectId)])
  const act = (run: () => Promise<unknown>) =>
    write.mutateAsync(run).then(
      () => true,
      () => false,
    )
  const move = async (env: Environment, by: -1 | 1, button: HTMLButtonElement) => {
    const ids = moved(
      environments.map((e) => e.id),
      env.id,
      by,
    )
    if (await act(() => api('PUT', `${base}/order`, { environment_ids: ids }))) {
      // After React has rendered the new order (the move can disable this button).
      setTimeout(() => {
        const twin = button.parentElement?.querySelector<HTMLButtonElement>('button:not(:disabled)')
        ;(button.disabled ? twin : button)?.focus()
      }, 0)
    }
  }
  return { error: write.error ? errorText(write.error) : null, act, move }
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
}) {
  const [creating, setCreating] = useState(false)
  const [deleting, setDeleting] = useState<Environment | null>(null)
  const base = `/api/projects/${props.projectId}/environments`
  const { error, act, move } = useEnvironmentActions(props.projectId, base, props.environments)
  const admin = { canAdmin: props.canAdmin, disabledTitle: props.canAdmin ? undefined : props.reason }
  const last = props.environments.length - 1
  return (
    <div>
      <EnvironmentsHead
        canAdmin={props.canAdmin}
        reason={props.reason}
        error={error}
        onCreate={() => setCreating(true)}
      />
      <ul className="environments">
        {props.environments.map((env, index) => (
          <EnvironmentRow
            key={env.id}
            env={env}
            position={{ first: index === 0, last: index === last }}
            admin={admin}
            onMove={(by, button) => void move(env, by, button)}
            onAct={(run) => void act(run)}
            base={base}
            onDelete={() => setDeleting(env)}
          />
        ))}
      </ul>
      <p className="hint">The order here is the order of the flag table's columns, for everyone in the project.</p>
      {creating ? (
        <CreateEnvironment projectId={props.projectId} base={base} onClose={() => setCreating(false)} />
      ) : null}
      {deleting ? (
        <DeleteEnvironment
          env={deleting}
          error={error}
          onClose={() => setDeleting(null)}
          onConfirm={async () => {
            if (await act(() => api('DELETE', `${base}/${deleting.id}`))) setDeleting(null)
          }}
        />
      ) : null}
    </div>
  )
}

function EnvironmentsHead(props: { canAdmin: boolean; reason: string; error: string | null; onCreate: () => void }) {
  return (
    <>
      <div className="toolbar">
        <h2>Environments</h2>
        <div className="spacer" />
        <button
          type="button"
          disabled={!props.canAdmin}
          title={props.canAdmin ? undefined : props.reason}
          onClick={props.onCreate}
        >
          New environment
        </button>
      </div>
      {!props.canAdmin ? <p className="hint">Changing environments {props.reason}.</p> : null}
      {props.error ? (
        <p role="alert" className="error">
          {props.error}
        </p>
      ) : null}
    </>
  )
}

function DeleteEnvironment(props: {
  env: Environment
  error: string | null
  onClose: () => void
  onConfirm: () => Promise<void>
}) {
  const { env } = props
  return (
    <ConfirmDialog
      title={`Delete environment ${env.name}?`}
      confirm={`Delete ${env.name}`}
      error={props.error}
      onClose={props.onClose}
      onConfirm={props.onConfirm}
    >
      <p>
        Every flag of <strong>{env.name}</strong> goes with it (SDKs of this environment see them deleted), as do its
        SDK keys, change requests and impressions.
      </p>
    </ConfirmDialog>
  )
}

/** One environment: move buttons, color, name and slug, its approval switch, make default, delete. */
function EnvironmentRow(props: {
  env: Environment
  position: { first: boolean; last: boolean }
  admin: { canAdmin: boolean; disabledTitle: string | undefined }
  base: string
  onMove: (by: -1 | 1, button: HTMLButtonElement) => void
  onAct: (run: () => Promise<unknown>) => void
  onDelete: () => void
}) {
  const { env, admin, base } = props
  return (
    <li data-env={env.slug}>
      <MoveButtons env={env} position={props.position} admin={admin} onMove={props.onMove} />
      <span className="swatch" aria-hidden="true" ref={(el) => el?.style.setProperty('background', env.color)} />
      <span className="env-name">{env.name}</span>
      <code>{env.slug}</code>
      {env.is_default ? <span className="badge">default</span> : null}
      <label className="inline">
        <input
          type="checkbox"
          aria-label={`${env.name} requires approval`}
          checked={env.require_approval}
          disabled={!admin.canAdmin}
          title={admin.disabledTitle}
          onChange={(e) => {
            // Read now: the write runs after React has put the controlled box back to the stored value.
            const require_approval = e.target.checked
            props.onAct(() => api('POST', `${base}/${env.id}/require-approval`, { require_approval }))
          }}
        />
        Require approval
      </label>
      <button
        type="button"
        disabled={!admin.canAdmin || env.is_default}
        title={env.is_default ? 'already the default' : admin.disabledTitle}
        onClick={() => props.onAct(() => api('POST', `${base}/${env.id}/default`))}
      >
        Make default
      </button>
      <button
        type="button"
        className="danger"
        disabled={!admin.canAdmin || env.is_default}
        title={env.is_default ? 'the default environment cannot be deleted' : admin.disabledTitle}
        onClick={props.onDelete}
        aria-label={`Delete ${env.name}`}
      >
        Delete
      </button>
    </li>
  )
}

/** Up and down, so the keyboard can reorder; each disabled at its end. */
function MoveButtons(props: {
  env: Environment
  position: { first: boolean; last: boolean }
  admin: { canAdmin: boolean; disabledTitle: string | undefined }
  onMove: (by: -1 | 1, button: HTMLButtonElement) => void
}) {
  const { env, position, admin } = props
  return (
    <span className="move">
      <button
        type="button"
        className="ghost"
        aria-label={`Move ${env.name} up`}
        disabled={!admin.canAdmin || position.first}
        title={position.first ? 'already first' : admin.disabledTitle}
        onClick={(e) => props.onMove(-1, e.currentTarget)}
      >
        ↑
      </button>
      <button
        type="button"
        className="ghost"
        aria-label={`Move ${env.name} down`}
        disabled={!admin.canAdmin || position.last}
        title={position.last ? 'already last' : admin.disabledTitle}
        onClick={(e) => props.onMove(1, e.currentTarget)}
      >
        ↓
      </button>
    </span>
  )
}

function CreateEnvironment(props: { projectId: string; base: string; onClose: () => void }) {
  const create = useServiceWrite(
    (body: { name: string; slug: string; color: string }) => api('POST', props.base, body),
    [queryKeys.environments(props.projectId)],
  )
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
        await create.mutateAsync({ name, slug: effectiveSlug, color })
        props.onClose()
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
