import { type ApprovalConflict, conflictRows, type DiffRow, patchDiff } from './diff.js'
import { DiffRows } from './diff-rows.js'
import type { Flag, Me } from './types.js'
import type { ListedRequest } from './use-change-requests.js'

type Action = 'approve' | 'reject' | 'cancel'

/** Who is looking at a request and what they may do (the role table: editors and up review, offline nobody). */
export interface Reviewer {
  me: Me
  offline: boolean
  canReview: boolean
}

/** One change request: who filed it, its diff against the flag as it is now, a refused approval, and the actions. */
export function RequestCard(props: {
  request: ListedRequest
  /** The flag as it is now (undefined when it is gone). */
  current: Flag | undefined
  environmentName: string
  reviewer: Reviewer
  conflict: ApprovalConflict | undefined
  onAct: (action: Action, force?: boolean) => void
}) {
  const { request: r, reviewer } = props
  const mine = r.requested_by === reviewer.me.email
  const pending = r.status === 'pending'
  return (
    <li data-request={r.id}>
      <h3>
        #{r.id} {r.flag_key} in {props.environmentName} <span className="badge">{r.status}</span>
        {r.stale ? <span className="badge warn">stale: the flag changed since</span> : null}
      </h3>
      <p className="hint">
        by {r.requested_by} on {new Date(r.created_at).toLocaleString()}
        {r.reviewed_by ? `, ${r.status} by ${r.reviewed_by}` : ''}
        {r.reason ? `: ${r.reason}` : ''}
      </p>
      <DiffTable requestId={r.id} rows={patchDiff(props.current, r.patch)} />
      {pending && props.conflict ? (
        <ConflictPanel
          request={r}
          conflict={props.conflict}
          disabled={!reviewer.canReview || mine}
          onForce={() => props.onAct('approve', true)}
        />
      ) : null}
      {pending ? <RequestActions mine={mine} reviewer={reviewer} onAct={props.onAct} /> : null}
    </li>
  )
}

function DiffTable(props: { requestId: number; rows: DiffRow[] }) {
  return (
    <table className="diff">
      <caption className="sr-only">Changes of request {props.requestId}</caption>
      <thead>
        <tr>
          <th scope="col">Field</th>
          <th scope="col">Now</th>
          <th scope="col">Requested</th>
        </tr>
      </thead>
      <tbody>
        <DiffRows rows={props.rows} />
        {props.rows.length === 0 ? (
          <tr>
            <td colSpan={3}>no difference from the flag as it is now</td>
          </tr>
        ) : null}
      </tbody>
    </table>
  )
}

/** Approve and reject for reviewers (never of their own request), cancel for the requester or a workspace admin. */
function RequestActions(props: { mine: boolean; reviewer: Reviewer; onAct: (action: Action) => void }) {
  const { mine, reviewer } = props
  const { canReview } = reviewer
  const reviewReason = mine
    ? 'you filed it: another editor reviews it'
    : reviewer.offline
      ? 'needs the service (offline)'
      : 'needs the project editor role'
  return (
    <div className="actions">
      <button
        type="button"
        className="primary"
        disabled={!canReview || mine}
        title={canReview && !mine ? undefined : reviewReason}
        onClick={() => props.onAct('approve')}
      >
        Approve
      </button>
      <button
        type="button"
        disabled={!canReview}
        title={canReview ? undefined : reviewReason}
        onClick={() => props.onAct('reject')}
      >
        Reject
      </button>
      {mine || reviewer.me.role === 'admin' ? (
        <button type="button" className="danger" disabled={reviewer.offline} onClick={() => props.onAct('cancel')}>
          Cancel request
        </button>
      ) : null}
      {mine ? <span className="hint">You filed it: another editor approves it.</span> : null}
    </div>
  )
}

/**
 * A refused approval: someone changed the fields this request sets after it was filed. The reviewer sees, per
 * field, what the requester saw, what is there now and what the request sets, and decides: approve anyway
 * (overwriting the newer value, `?force=true`), or reject.
 */
function ConflictPanel(props: {
  request: ListedRequest
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
