import { useEffect, useState } from 'react'
import { api, errorText } from './api.js'
import { type DiffRow, patchDiff } from './diff.js'
import { DiffRows } from './diff-rows.js'
import type { Environment, Flag } from './types.js'

/** Fields a promotion copies (the service's promote route copies the flag but not its prerequisites' targets). */
const COPIED = [
  'is_enabled',
  'rollout_percentage',
  'description',
  'rules',
  'flag_type',
  'default_value',
  'disabled_value',
  'variants',
  'prerequisites',
] as const

/** What promoting `source` over `target` changes there, field by field (the whole target is new when it is absent). */
export function promotionDiff(source: Flag, target: Flag | undefined): DiffRow[] {
  const fields: Record<string, unknown> = {}
  for (const field of COPIED) fields[field] = source[field] === undefined ? null : source[field]
  return patchDiff(target, fields)
}

/**
 * What promoting the flag from `fromId` to `targetId` would change there,
 * read again whenever either changes (null while it loads), and a message
 * for a failed read or a done promotion.
 */
function usePromotionDiff(fromId: string, targetId: string, key: string) {
  const [diff, setDiff] = useState<DiffRow[] | null>(null)
  const [message, setMessage] = useState<string | null>(null)
  useEffect(() => {
    setDiff(null)
    setMessage(null)
    if (!targetId) return
    let cancelled = false
    void Promise.all([
      api<Flag>('GET', `/api/environments/${fromId}/flags/${key}`),
      api<Flag>('GET', `/api/environments/${targetId}/flags/${key}`).catch(() => undefined),
    ])
      .then(([source, target]) => {
        if (!cancelled) setDiff(promotionDiff(source, target))
      })
      .catch((e) => setMessage(errorText(e)))
    return () => {
      cancelled = true
    }
  }, [fromId, targetId, key])
  return { diff, setDiff, message, setMessage }
}

/** Promote a flag from one environment to another of the project, showing the diff first. */
export function Promote(props: {
  flagKey: string
  from: Environment
  environments: Environment[]
  disabled: boolean
  onPromoted: (envId: string, flag: Flag) => void
}) {
  const targets = props.environments.filter((e) => e.id !== props.from.id)
  const [targetId, setTargetId] = useState(targets[0]?.id ?? '')
  const key = encodeURIComponent(props.flagKey)
  const { diff, setDiff, message, setMessage } = usePromotionDiff(props.from.id, targetId, key)
  const target = targets.find((e) => e.id === targetId)
  if (targets.length === 0) return null
  const promote = () =>
    void api<Flag>('POST', `/api/environments/${props.from.id}/flags/${key}/promote`, { target_env_id: targetId })
      .then((flag) => {
        props.onPromoted(targetId, flag)
        setDiff([])
        setMessage(`Promoted to ${target?.name}.`)
      })
      .catch((e) => setMessage(errorText(e)))
  return (
    <fieldset className="promote" disabled={props.disabled}>
      <legend>Promote</legend>
      <label>
        Promote to
        <select value={targetId} onChange={(e) => setTargetId(e.target.value)}>
          {targets.map((e) => (
            <option key={e.id} value={e.id}>
              {e.name}
            </option>
          ))}
        </select>
      </label>
      {diff ? <PromotionDiff diff={diff} from={props.from.name} target={target?.name} /> : null}
      {message ? (
        <p role="status" className="notice">
          {message}
        </p>
      ) : null}
      <button type="button" disabled={!diff || diff.length === 0} onClick={promote}>
        Promote to {target?.name}
      </button>
    </fieldset>
  )
}

function PromotionDiff(props: { diff: DiffRow[]; from: string; target: string | undefined }) {
  if (props.diff.length === 0)
    return <p className="hint">{props.target} already has this flag exactly as it is here.</p>
  return (
    <table className="diff" aria-label={`What promoting changes in ${props.target}`}>
      <thead>
        <tr>
          <th scope="col">Field</th>
          <th scope="col">In {props.target}</th>
          <th scope="col">From {props.from}</th>
        </tr>
      </thead>
      <tbody>
        <DiffRows rows={props.diff} />
      </tbody>
    </table>
  )
}
