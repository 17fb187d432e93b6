import { useState } from 'react'
import { errorText } from './api.js'
import { EnvironmentSelect } from './environment-select.js'
import { ListTable } from './list-table.js'
import type { Environment, Me, Role } from './types.js'
import { type Schedule, useCreateSchedule, useSchedules } from './use-schedules.js'

const when = (iso: string) => new Date(iso).toLocaleString()
const patchText = (patch: Record<string, unknown>) =>
  Object.entries(patch)
    .map(([field, value]) => `${field}: ${JSON.stringify(value)}`)
    .join(', ')

/** A pending schedule's state: waiting for its time, for an approval, or past its time without one. */
function pendingState(s: Schedule): string {
  if (s.overdue) return 'overdue: needs approval'
  if (s.requires_approval && s.approved_by === null) return 'needs approval'
  return s.approved_by ? `approved by ${s.approved_by}` : 'scheduled'
}

function outcome(s: Schedule): string {
  if (s.status === 'cancelled') return `cancelled by ${s.result?.cancelled_by ?? '?'}`
  if (s.status === 'failed') return `failed: ${s.result?.reason ?? ''}`
  const late = s.result?.late_ms ? ` (${Math.round(s.result.late_ms / 1000)} s late)` : ''
  return `${s.result?.changed === false ? 'applied, nothing to change' : 'applied'}${late}`
}

/**
 * The scheduled changes of one environment: upcoming ones (cancel; approve where the environment requires it, by
 * someone other than their creator) and past ones with their outcome. Editors write; everyone else reads.
 */
export function Schedules(props: { me: Me; role: Role; environments: Environment[]; offline: boolean }) {
  const [envId, setEnvId] = useState(props.environments[0]?.id ?? '')
  const { list, cancel, approve } = useSchedules(envId)
  const blocked = props.offline
    ? 'needs the service (offline)'
    : props.role === 'viewer'
      ? 'needs the editor role'
      : null
  const all = list.data ?? []
  const upcoming = all.filter((s) => s.status === 'pending')
  const past = all.filter((s) => s.status !== 'pending').reverse()
  const failed = list.error ?? cancel.error ?? approve.error
  return (
    <div>
      <h2>Scheduled changes</h2>
      <EnvironmentSelect label="Environment " value={envId} environments={props.environments} onChange={setEnvId} />
      <p className="hint">Schedule a change from a flag's editor ("Apply at…").</p>
      {failed ? (
        <p role="alert" className="error">
          {errorText(failed)}
        </p>
      ) : null}
      <h3>Upcoming</h3>
      <div className="table-wrap">
        <ListTable columns={['Flag', 'Change', 'Runs at', 'Created by', 'State']}>
          {upcoming.map((s) => (
            <tr key={s.id} data-schedule={s.id}>
              <td>{s.flag_key}</td>
              <td>{patchText(s.patch)}</td>
              <td>{when(s.run_at)}</td>
              <td>{s.created_by}</td>
              <td>{s.overdue ? <span className="badge warn">{pendingState(s)}</span> : pendingState(s)}</td>
              <td>
                {s.requires_approval && s.approved_by === null ? (
                  <button
                    type="button"
                    disabled={blocked !== null || s.created_by === props.me.email}
                    title={blocked ?? (s.created_by === props.me.email ? 'approved by someone else' : undefined)}
                    onClick={() => approve.mutate(s.id)}
                  >
                    Approve
                  </button>
                ) : null}{' '}
                <button
                  type="button"
                  className="danger"
                  disabled={blocked !== null}
                  title={blocked ?? undefined}
                  aria-label={`Cancel schedule ${s.id} of ${s.flag_key}`}
                  onClick={() => cancel.mutate(s.id)}
                >
                  Cancel
                </button>
              </td>
            </tr>
          ))}
        </ListTable>
      </div>
      {upcoming.length === 0 ? <p className="hint">Nothing scheduled.</p> : null}
      <h3>Past</h3>
      <div className="table-wrap">
        <ListTable columns={['Flag', 'Change', 'Ran at', 'Created by', 'Outcome']}>
          {past.map((s) => (
            <tr key={s.id} data-schedule={s.id}>
              <td>{s.flag_key}</td>
              <td>{patchText(s.patch)}</td>
              <td>{s.applied_at ? when(s.applied_at) : `not run (was due ${when(s.run_at)})`}</td>
              <td>{s.created_by}</td>
              <td>{outcome(s)}</td>
              <td />
            </tr>
          ))}
        </ListTable>
      </div>
    </div>
  )
}

/** A local date and time (`datetime-local`, to the second) as an ISO timestamp, or null when incomplete. */
function isoOf(local: string): string | null {
  const time = new Date(local).getTime()
  return Number.isNaN(time) ? null : new Date(time).toISOString()
}

/**
 * "Apply at…" in the flag editor: the fields edited so far, applied to the flag at a chosen time instead of now.
 * The service checks the patch now, as a save would, and applies it then against the flag as it is then.
 */
export function ScheduleChange(props: {
  envId: string
  flagKey: string
  patch: Record<string, unknown>
  disabled: boolean
}) {
  const [at, setAt] = useState('')
  const create = useCreateSchedule(props.envId, props.flagKey)
  const runAt = isoOf(at)
  const empty = Object.keys(props.patch).length === 0
  return (
    <details>
      <summary>Apply at…</summary>
      <label>
        Apply the edited fields at{' '}
        <input type="datetime-local" step={1} value={at} onChange={(e) => setAt(e.target.value)} />
      </label>{' '}
      <button
        type="button"
        disabled={props.disabled || empty || runAt === null || create.isPending}
        title={empty ? 'edit a field first' : undefined}
        onClick={() => runAt && create.mutate({ patch: props.patch, run_at: runAt })}
      >
        Schedule
      </button>
      {empty ? <p className="hint">Edit the fields to change, then choose when.</p> : null}
      {create.error ? (
        <p role="alert" className="error">
          {errorText(create.error)}
        </p>
      ) : null}
      {create.data ? (
        <p role="status" className="notice">
          Scheduled for {when(create.data.run_at)}: see the Schedules tab.
        </p>
      ) : null}
    </details>
  )
}
