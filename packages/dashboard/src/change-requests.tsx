import { useState } from 'react'
import { ErrorLine } from './error-line.js'
import { RequestCard } from './request-card.js'
import type { Environment, Me, Role } from './types.js'
import { requestId, useChangeRequests, useRequestActions } from './use-change-requests.js'

/**
 * Change requests of the project's approval environments, newest first,
 * each with the diff against the flag as it is now. Who may do what follows
 * the role table: editors and up approve or reject, but never their own
 * request; the requester or a workspace admin cancels.
 */
export function ChangeRequests(props: { me: Me; role: Role; environments: Environment[]; offline: boolean }) {
  const [status, setStatus] = useState('pending')
  const { requests, flags, error, load } = useChangeRequests(props.environments, status)
  const actions = useRequestActions(load)
  const { conflicts, act } = actions
  const approvalEnvs = props.environments.filter((e) => e.require_approval)
  const canReview = (props.role === 'admin' || props.role === 'editor') && !props.offline
  const reviewer = { me: props.me, offline: props.offline, canReview }
  const envName = (id: string) => props.environments.find((e) => e.id === id)?.name ?? id
  return (
    <div>
      <StatusToolbar status={status} onChange={setStatus} />
      <p className="hint">
        {approvalEnvs.length
          ? `Saves in ${approvalEnvs.map((e) => e.name).join(', ')} become change requests.`
          : 'No environment of this project requires approval (Environments tab).'}
      </p>
      <ErrorLine errors={[actions.error, props.offline ? null : error]} />
      {requests.length === 0 ? <p className="hint">No {status === 'all' ? '' : `${status} `}change requests.</p> : null}
      <ul className="requests">
        {requests.map((r) => (
          <RequestCard
            key={requestId(r)}
            request={r}
            current={flags.get(`${r.environment_id}/${r.flag_key}`)}
            environmentName={envName(r.environment_id)}
            reviewer={reviewer}
            conflict={conflicts.get(requestId(r))}
            onAct={(action, force) => void act(r, action, force)}
          />
        ))}
      </ul>
    </div>
  )
}

function StatusToolbar(props: { status: string; onChange: (status: string) => void }) {
  return (
    <div className="toolbar">
      <h2>Change requests</h2>
      <div className="spacer" />
      <label>
        Status
        <select value={props.status} onChange={(e) => props.onChange(e.target.value)}>
          <option value="pending">pending</option>
          <option value="approved">approved</option>
          <option value="rejected">rejected</option>
          <option value="cancelled">cancelled</option>
          <option value="all">all</option>
        </select>
      </label>
    </div>
  )
}
