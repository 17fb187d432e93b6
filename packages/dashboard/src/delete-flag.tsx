import { useId, useState } from 'react'
import { ConfirmDialog } from './dialog.js'
import { chosenEnvironments } from './flag-draft.js'
import { flagWriter, type Outbox } from './flag-write.js'
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
  const chosen = chosenEnvironments(environments, where).filter((e) => presentIn(e.id))
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
 * Why the "Delete flag" button cannot be used, or null when it can: the
 * caller may delete from no environment that has the flag (the first
 * refusal says why), or offline no outbox is open to queue the delete in.
 */
export function deleteUnavailable(
  role: Role,
  environments: readonly Environment[],
  presentIn: (envId: string) => boolean,
  context: { flagKey: string; offline: boolean; outboxOpen: boolean },
): string | null {
  if (deletePlan(role, environments, 'all', presentIn).targets.length === 0) {
    const present = environments.filter((e) => presentIn(e.id))
    return (
      present.map((e) => deleteRefusal(role, e)).find((r) => r !== null) ?? `${context.flagKey} is in no environment`
    )
  }
  if (context.offline && !context.outboxOpen)
    return 'needs a connection: the outbox that queues edits offline is not open yet'
  return null
}

interface DeleteFlagProps {
  flagKey: string
  envId: string
  environments: readonly Environment[]
  role: Role
  offline: boolean
  outbox: Outbox | null
  presentIn: (envId: string) => boolean
  revisionOf: (envId: string) => number | undefined
  onDeleted: (envIds: string[]) => void
}

/**
 * Deletes the flag from each target in turn: a `delete` in the environment's
 * outbox with the revision the page saw as its base, delivered at once online
 * (a change since is a conflict, a refusal the service's 403/422) and queued
 * offline. Those already deleted (or queued) are reported to `onDeleted`
 * whatever the next environment answers.
 */
async function deleteFrom(props: DeleteFlagProps, targets: readonly Environment[]): Promise<void> {
  if (targets.length === 0) throw new Error('Nothing to delete here: choose an environment you may delete from.')
  if (props.offline && !props.outbox) throw new Error('Deleting needs a connection: the outbox is not open.')
  const writer = flagWriter({ queued: props.offline, outbox: props.outbox })
  const done: string[] = []
  try {
    for (const env of targets) {
      await writer.remove(env.id, props.flagKey, props.revisionOf(env.id))
      done.push(env.id)
    }
  } finally {
    if (done.length) props.onDeleted(done)
  }
}

/**
 * The "Delete flag" control of the editor and its confirmation: from the
 * editor's environment or every environment that has the flag (as creating
 * offers one or all). Each is a `delete` in that environment's outbox with the
 * revision this page saw as its base, so a delete racing someone's edit is a
 * conflict the pending panel shows with base / mine / theirs rather than a
 * silent loss; online it is delivered at once and the dialog says so.
 */
export function DeleteFlag(props: DeleteFlagProps) {
  const [open, setOpen] = useState(false)
  const [where, setWhere] = useState<'all' | string>(props.envId)
  const reasonId = useId()
  const reason = deleteUnavailable(props.role, props.environments, props.presentIn, {
    flagKey: props.flagKey,
    offline: props.offline,
    outboxOpen: props.outbox !== null,
  })
  const plan = deletePlan(props.role, props.environments, where, props.presentIn)
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
          onConfirm={async () => {
            await deleteFrom(props, plan.targets)
            setOpen(false)
          }}
          onClose={() => setOpen(false)}
        >
          <DeleteChoice props={props} plan={plan} where={where} onWhere={setWhere} />
        </ConfirmDialog>
      ) : null}
    </>
  )
}

/** Where to delete from, what that deletes and keeps, and what approval and offline mean for it. */
function DeleteChoice(args: {
  props: DeleteFlagProps
  plan: ReturnType<typeof deletePlan>
  where: string
  onWhere: (where: string) => void
}) {
  const { props } = args
  const { targets, refused } = args.plan
  const approval = targets.filter((e) => e.require_approval)
  return (
    <>
      <label>
        Delete from
        <select value={args.where} onChange={(e) => args.onWhere(e.target.value)}>
          <option value="all">every environment</option>
          {props.environments
            .filter((e) => props.presentIn(e.id))
            .map((e) => (
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
      {approval.length ? (
        <p className="hint">
          {approval.map((e) => e.name).join(', ')} requires approval, but a change request cannot delete: as project
          admin your delete applies at once.
        </p>
      ) : null}
      {props.offline ? (
        <p className="notice">
          Offline: the delete is queued and delivered when the service is reachable; if someone changed the flag since
          this page saw it, it comes back as a conflict to resolve.
        </p>
      ) : null}
    </>
  )
}
