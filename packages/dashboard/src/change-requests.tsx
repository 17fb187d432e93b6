import { useCallback, useEffect, useState } from 'react'
import { ApiError, api, errorText } from './api.js'
import { type ApprovalConflict, approvalConflictOf, conflictRows, patchDiff } from './diff.js'
import type { ChangeRequest, Environment, Flag, Me, Role } from './types.js'

type Request = ChangeRequest & { environment_id: string; stale?: boolean }

/**
 * Change requests of the project's approval environments, newest first,
 * each with the diff against the flag as it is now. Who may do what follows
 * the role table: editors and up approve or reject, but never their own
 * request; the requester or a workspace admin cancels.
 */
export function ChangeRequests(props: { me: Me; role: Role; environments: Environment[]; offline: boolean }) {
  const [requests, setRequests] = useState<Request[]>([])
  const [flags, setFlags] = useState<Map<string, Flag>>(new Map())
  const [status, setStatus] = useState('pending')
  const [error, setError] = useState<string | null>(null)
  // Approvals the service refused as conflicting (409), by request: shown as base / now / requested, to force.
  const [conflicts, setConflicts] = useState<ReadonlyMap<string, ApprovalConflict>>(new Map())
  const approvalEnvs = props.environments.filter((e) => e.require_approval)

  const load = useCallback(async () => {
    try {
      const lists = await Promise.all(
        props.environments.map((env) =>
          api<Request[]>(
            'GET',
            `/api/environments/${env.id}/change-requests${status === 'all' ? '' : `?status=${status}`}`,
          ),
        ),
      )
      const all = lists.flat().sort((a, b) => (a.created_at < b.created_at ? 1 : -1))
      const current = new Map<string, Flag>()
      for (const r of all) {
        const id = `${r.environment_id}/${r.flag_key}`
        if (current.has(id)) continue
        const flag = await api<Flag>(
          'GET',
          `/api/environments/${r.environment_id}/flags/${encodeURIComponent(r.flag_key)}`,
        ).catch(() => undefined)
        if (flag) current.set(id, flag)
      }
      setFlags(current)
      setRequests(all)
    } catch (e) {
      setError(errorText(e))
    }
  }, [props.environments, status])
  useEffect(() => {
    void load()
  }, [load])

  async function act(request: Request, action: 'approve' | 'reject' | 'cancel', force = false) {
    setError(null)
    const id = `${request.environment_id}-${request.id}`
    const base = `/api/environments/${request.environment_id}/change-requests/${request.id}`
    try {
      if (action === 'cancel') await api('DELETE', base)
      else await api('POST', `${base}/${action}${force ? '?force=true' : ''}`, action === 'reject' ? {} : undefined)
      setConflicts((all) => withoutKey(all, id))
      await load()
    } catch (e) {
      const conflict = e instanceof ApiError && e.status === 409 ? approvalConflictOf(e.body) : undefined
      if (action === 'approve' && conflict) setConflicts((all) => new Map(all).set(id, conflict))
      else setError(errorText(e))
    }
  }

  const canReview = (props.role === 'admin' || props.role === 'editor') && !props.offline
  const envName = (id: string) => props.environments.find((e) => e.id === id)?.name ?? id
  return (
    <div>
      <div className="toolbar">
        <h2>Change requests</h2>
        <div className="spacer" />
        <label>
          Status
          <select value={status} onChange={(e) => setStatus(e.target.value)}>
            <option value="pending">pending</option>
            <option value="approved">approved</option>
            <option value="rejected">rejected</option>
            <option value="cancelled">cancelled</option>
            <option value="all">all</option>
          </select>
        </label>
      </div>
      <p className="hint">
        {approvalEnvs.length
          ? `Saves in ${approvalEnvs.map((e) => e.name).join(', ')} become change requests.`
          : 'No environment of this project requires approval (Environments tab).'}
      </p>
      {error ? (
        <p role="alert" className="error">
          {error}
        </p>
      ) : null}
      {requests.length === 0 ? <p className="hint">No {status === 'all' ? '' : `${status} `}change requests.</p> : null}
      <ul className="requests">
        {requests.map((r) => {
          const mine = r.requested_by === props.me.email
          const diff = patchDiff(flags.get(`${r.environment_id}/${r.flag_key}`), r.patch)
          const pending = r.status === 'pending'
          const reviewReason = mine
            ? 'you filed it: another editor reviews it'
            : props.offline
              ? 'needs the service (offline)'
              : 'needs the project editor role'
          return (
            <li key={`${r.environment_id}-${r.id}`} data-request={r.id}>
              <h3>
                #{r.id} {r.flag_key} in {envName(r.environment_id)} <span className="badge">{r.status}</span>
                {r.stale ? <span className="badge warn">stale: the flag changed since</span> : null}
              </h3>
              <p className="hint">
                by {r.requested_by} on {new Date(r.created_at).toLocaleString()}
                {r.reviewed_by ? `, ${r.status} by ${r.reviewed_by}` : ''}
                {r.reason ? `: ${r.reason}` : ''}
              </p>
              <table className="diff">
                <caption className="sr-only">Changes of request {r.id}</caption>
                <thead>
                  <tr>
                    <th scope="col">Field</th>
                    <th scope="col">Now</th>
                    <th scope="col">Requested</th>
                  </tr>
                </thead>
                <tbody>
                  {diff.map((d) => (
                    <tr key={d.field}>
                      <th scope="row">{d.field}</th>
                      <td>
                        <del>{d.before}</del>
                      </td>
                      <td>
                        <ins>{d.after}</ins>
                      </td>
                    </tr>
                  ))}
                  {diff.length === 0 ? (
                    <tr>
                      <td colSpan={3}>no difference from the flag as it is now</td>
                    </tr>
                  ) : null}
                </tbody>
              </table>
              {pending && conflicts.has(`${r.environment_id}-${r.id}`) ? (
                <ConflictPanel
                  request={r}
                  conflict={conflicts.get(`${r.environment_id}-${r.id}`) as ApprovalConflict}
                  disabled={!canReview || mine}
                  onForce={() => void act(r, 'approve', true)}
                />
              ) : null}
              {pending ? (
                <div className="actions">
                  <button
                    type="button"
                    className="primary"
                    disabled={!canReview || mine}
                    title={canReview && !mine ? undefined : reviewReason}
                    onClick={() => void act(r, 'approve')}
                  >
                    Approve
                  </button>
                  <button
                    type="button"
                    disabled={!canReview}
                    title={canReview ? undefined : reviewReason}
                    onClick={() => void act(r, 'reject')}
                  >
                    Reject
                  </button>
                  {mine || props.me.role === 'admin' ? (
                    <button
                      type="button"
                      className="danger"
                      disabled={props.offline}
                      onClick={() => void act(r, 'cancel')}
                    >
                      Cancel request
                    </button>
                  ) : null}
                  {mine ? <span className="hint">You filed it: another editor approves it.</span> : null}
                </div>
              ) : null}
            </li>
          )
        })}
      </ul>
    </div>
  )
}

function withoutKey<V>(map: ReadonlyMap<string, V>, key: string): ReadonlyMap<string, V> {
  if (!map.has(key)) return map
  const next = new Map(map)
  next.delete(key)
  return next
}

/**
 * A refused approval: someone changed the fields this request sets after it was filed. The reviewer sees, per
 * field, what the requester saw, what is there now and what the request sets, and decides: approve anyway
 * (overwriting the newer value, `?force=true`), or reject.
 */
function ConflictPanel(props: {
  request: Request
  conflict: ApprovalConflict
  disabled: boolean
  onForce: () => void
}) {
  const { request, conflict } = props
  const rows = conflictRows(conflict, request.patch)
  return (
    <section className="conflict" aria-label={`Conflict of request ${request.id}`}>
      <p role="alert" className="error">
        Not approved: {conflict.reason}. Approving anyway replaces what was set since with what the request sets.
      </p>
      <table className="diff">
        <caption className="sr-only">Conflicting fields of request {request.id}</caption>
        <thead>
          <tr>
            <th scope="col">Field</th>
            <th scope="col">When requested</th>
            <th scope="col">Now</th>
            <th scope="col">Requested</th>
          </tr>
        </thead>
        <tbody>
          {rows.map((row) => (
            <tr key={row.field}>
              <th scope="row">{row.field}</th>
              <td>{row.base}</td>
              <td>
                <del>{row.now}</del>
              </td>
              <td>
                <ins>{row.requested}</ins>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      <div className="actions">
        <button type="button" className="danger" disabled={props.disabled} onClick={props.onForce}>
          Approve anyway
        </button>
      </div>
    </section>
  )
}
