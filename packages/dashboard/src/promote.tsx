import { flagDifferences } from '@flagsync/protocol'
import { useMutation, useQuery } from '@tanstack/react-query'
import { useState } from 'react'
import { ApiError, api } from './api.js'
import { type DiffRow, differenceRows } from './diff.js'
import { DiffRows } from './diff-rows.js'
import { ErrorLine } from './error-line.js'
import { queryKeys } from './query-keys.js'
import type { Environment, Flag } from './types.js'

/** Fields a promotion copies: the flag as stored (the service's promote route copies it whole). */
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
  return differenceRows(flagDifferences(target && copied(target), copied(source)))
}

/** The fields of a flag a promotion copies: its lifecycle (revision, tags, owner, …) stays in each environment. */
function copied(flag: Flag): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  for (const field of COPIED) if (flag[field] !== undefined) out[field] = flag[field]
  return out
}

/** The flag in an environment, or undefined where it does not exist (404): promoting creates it there. */
async function flagOrNone(envId: string, key: string): Promise<Flag | undefined> {
  try {
    return await api<Flag>('GET', `/api/environments/${envId}/flags/${key}`)
  } catch (e) {
    if (e instanceof ApiError && e.status === 404) return undefined
    throw e
  }
}

/** What promoting the flag from `fromId` to `targetId` would change there, read again whenever either changes. */
function usePromotionDiff(fromId: string, targetId: string, key: string) {
  return useQuery({
    queryKey: queryKeys.promotion(fromId, targetId, key),
    queryFn: async () => {
      const [source, target] = await Promise.all([
        api<Flag>('GET', `/api/environments/${fromId}/flags/${key}`),
        flagOrNone(targetId, key),
      ])
      return promotionDiff(source, target)
    },
    enabled: targetId !== '',
    gcTime: 0,
  })
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
  const loaded = usePromotionDiff(props.from.id, targetId, key)
  const target = targets.find((e) => e.id === targetId)
  const promotion = useMutation({
    mutationFn: (to: string) =>
      api<Flag>('POST', `/api/environments/${props.from.id}/flags/${key}/promote`, { target_env_id: to }),
    onSuccess: (flag, to) => props.onPromoted(to, flag),
  })
  // Promoted to the target shown: nothing is left to change there until the flag changes again.
  const promoted = promotion.isSuccess && promotion.variables === targetId
  const diff = promoted ? [] : (loaded.data ?? null)
  if (targets.length === 0) return null
  const promote = () => promotion.mutate(targetId)
  return (
    <fieldset className="promote" disabled={props.disabled}>
      <legend>Promote</legend>
      <label>
        Promote to
        <select
          value={targetId}
          onChange={(e) => {
            promotion.reset()
            setTargetId(e.target.value)
          }}
        >
          {targets.map((e) => (
            <option key={e.id} value={e.id}>
              {e.name}
            </option>
          ))}
        </select>
      </label>
      {diff ? <PromotionDiff diff={diff} from={props.from.name} target={target?.name} /> : null}
      {promoted ? (
        <p role="status" className="notice">
          Promoted to {target?.name}.
        </p>
      ) : null}
      <ErrorLine errors={[loaded.error, promotion.error]} />
      <button type="button" disabled={!diff || diff.length === 0} onClick={promote}>
        Promote to {target?.name}
      </button>
    </fieldset>
  )
}

/** A promotion's diff: each field as the target has it (struck) and as the source would put it. */
export function PromotionDiff(props: { diff: DiffRow[]; from: string; target: string | undefined; label?: string }) {
  if (props.diff.length === 0)
    return <p className="hint">{props.target} already has this flag exactly as it is here.</p>
  return (
    <table className="diff" aria-label={props.label ?? `What promoting changes in ${props.target}`}>
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
