import { useId, useState } from 'react'
import { api } from './api.js'
import { ConfirmDialog } from './dialog.js'
import type { Outbox } from './offline-edits.js'
import type { Environment, Role } from './types.js'

/**
 * Why the caller may not delete a flag in `env`, or null when they may. The
 * service's role table: deleting needs a project editor; an environment that
 * requires approval needs a project admin, because a change request cannot
 * delete (the sync route would refuse the whole queued batch with a 403, so
 * such a delete is not queued either).
 */
export function deleteRefusal(role: Role, env: Environment): string | null {
  if (role === 'viewer') return 'needs the project editor role'
  if (env.require_approval && role !== 'admin')
    return `${env.name} requires approval: deleting a flag there needs the project admin role (a change request cannot delete)`
  return null
}

/** Which environments a delete from `where` ('all' or one environment id) removes the flag from, and which it cannot. */
export function deletePlan(
  role: Role,
  environments: readonly Environment[],
  where: 'all' | string,
  presentIn: (envId: string) => boolean,
): { targets: Environment[]; refused: Array<{ env: Environment; reason: string }> } {
  const chosen = environments.filter((e) => (where === 'all' || e.id === where) && presentIn(e.id))
  const targets: Environment[] = []
  const refused: Array<{ env: Environment; reason: string }> = []
  for (const env of chosen) {
    const reason = deleteRefusal(role, env)
    if (reason) refused.push({ env, reason })
    else targets.push(env)
  }
  return { targets, refused }
}

/**
 * The "Delete flag" control of the editor and its confirmation: from the
 * editor's environment or every environment that has the flag (as creating
 * offers one or all). Online each environment gets `DELETE …/flags/:key` with
 * `If-Match` of the revision this page saw, so a delete racing someone's edit
 * is a 409 naming it rather than a silent loss. Offline each is a `delete`
 * in that environment's outbox with the same revision as its base: the sync
 * route answers a conflict the pending panel shows with base / mine / theirs.
 */
export function DeleteFlag(props: {
  flagKey: string
  envId: string
  environments: readonly Environment[]
  role: Role
  offline: boolean
  outbox: Outbox | null
  presentIn: (envId: string) => boolean
  revisionOf: (envId: string) => number | undefined
  onDeleted: (envIds: string[]) => void
}) {
  const [open, setOpen] = useState(false)
  const [where, setWhere] = useState<'all' | string>(props.envId)
  const reasonId = useId()
  const present = props.environments.filter((e) => props.presentIn(e.id))
  const anyDeletable = deletePlan(props.role, props.environments, 'all', props.presentIn).targets.length > 0
  const reason = !anyDeletable
    ? (present.map((e) => deleteRefusal(props.role, e)).find((r) => r !== null) ??
      `${props.flagKey} is in no environment`)
    : props.offline && !props.outbox
      ? 'needs a connection: the outbox that queues edits offline is not open yet'
      : null
  const { targets, refused } = deletePlan(props.role, props.environments, where, props.presentIn)

  async function confirm() {
    if (targets.length === 0) throw new Error('Nothing to delete here: choose an environment you may delete from.')
    const done: string[] = []
    try {
      for (const env of targets) {
        const revision = props.revisionOf(env.id)
        if (props.offline) {
          if (!props.outbox) throw new Error('Deleting needs a connection: the outbox is not open.')
          await props.outbox.delete(env.id, props.flagKey, revision)
        } else {
          await api<void>(
            'DELETE',
            `/api/environments/${env.id}/flags/${encodeURIComponent(props.flagKey)}`,
            undefined,
            revision === undefined ? {} : { 'If-Match': `"${revision}"` },
          )
        }
        done.push(env.id)
      }
    } finally {
      // Those already deleted (or queued) are gone whatever the next environment answered.
      if (done.length) props.onDeleted(done)
    }
    setOpen(false)
  }

  return (
    <>
      <button
        type="button"
        className="danger"
        disabled={reason !== null}
        title={reason ?? undefined}
        aria-describedby={reason ? reasonId : undefined}
        onClick={() => setOpen(true)}
      >
        Delete flag
      </button>
      {reason ? (
        <span className="hint" id={reasonId}>
          Deleting {reason}.
        </span>
      ) : null}
      {open ? (
        <ConfirmDialog
          title={`Delete ${props.flagKey}?`}
          confirm={props.offline ? 'Queue delete' : 'Delete flag'}
          onConfirm={confirm}
          onClose={() => setOpen(false)}
        >
          <label>
            Delete from
            <select value={where} onChange={(e) => setWhere(e.target.value)}>
              <option value="all">every environment</option>
              {present.map((e) => (
                <option key={e.id} value={e.id}>
                  {e.name} only
                </option>
              ))}
            </select>
          </label>
          <p id="delete-targets">
            {targets.length
              ? `${props.flagKey} is deleted from ${targets.map((e) => e.name).join(', ')}: SDKs there stop getting it and serve their own defaults.`
              : `${props.flagKey} cannot be deleted from the chosen environment.`}
          </p>
          {refused.length ? (
            <ul className="hint">
              {refused.map((r) => (
                <li key={r.env.id}>
                  {r.env.name} keeps it: {r.reason}.
                </li>
              ))}
            </ul>
          ) : null}
          {targets.some((e) => e.require_approval) ? (
            <p className="hint">
              {targets
                .filter((e) => e.require_approval)
                .map((e) => e.name)
                .join(', ')}{' '}
              requires approval, but a change request cannot delete: as project admin your delete applies at once.
            </p>
          ) : null}
          {props.offline ? (
            <p className="notice">
              Offline: the delete is queued and delivered when the service is reachable; if someone changed the flag
              since this page saw it, it comes back as a conflict to resolve.
            </p>
          ) : null}
        </ConfirmDialog>
      ) : null}
    </>
  )
}
