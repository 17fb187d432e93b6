import { useState } from 'react'
import { PromoteChosen, promotionRows } from './compare-promote.js'
import { EnvironmentSelect } from './environment-select.js'
import { ErrorLine } from './error-line.js'
import { PromotionDiff } from './promote.js'
import type { Environment, Role } from './types.js'
import { type ComparedFlag, type Comparison, type PromotionConflict, useComparison } from './use-compare.js'

/** A flag that can be promoted from → to: it is in `from`, and reads otherwise in `to`. */
const promotable = (f: ComparedFlag) => f.status === 'different' || f.status === 'only_in_from'

/** After a promotion: what was promoted, or that nothing was because some flags changed in the target since. */
interface Outcome {
  done: string | null
  conflicts: PromotionConflict[]
}
const NOTHING_YET: Outcome = { done: null, conflicts: [] }

/**
 * Two environments of a project side by side (defaults: the first two in order): every flag that differs, the
 * fields side by side, the flags only one of them has; several chosen flags are promoted in one request, all or
 * nothing, and a flag changed in the target since the comparison is named with a refresh.
 */
export function Compare(props: { projectId: string; environments: Environment[]; role: Role; offline: boolean }) {
  const { environments } = props
  const [picked, setPicked] = useState<{ from?: string; to?: string }>({})
  const fromId = picked.from ?? environments[0]?.id ?? ''
  const toId = picked.to ?? environments[1]?.id ?? ''
  const [differencesOnly, setDifferencesOnly] = useState(true)
  const [selected, setSelected] = useState<ReadonlySet<string>>(new Set())
  const [outcome, setOutcome] = useState<Outcome>(NOTHING_YET)
  const same = fromId === toId
  const comparison = useComparison(props.projectId, same ? '' : fromId, toId)
  const pick = (side: 'from' | 'to', id: string) => {
    setPicked({ from: fromId, to: toId, [side]: id })
    setSelected(new Set())
    setOutcome(NOTHING_YET)
  }
  const data = same ? undefined : comparison.data
  const canWrite = props.role !== 'viewer' && !props.offline
  const toggle = (key: string) =>
    setSelected((now) => {
      const next = new Set(now)
      if (!next.delete(key)) next.add(key)
      return next
    })
  const refresh = async () => {
    await comparison.refetch()
    setOutcome(NOTHING_YET)
  }
  return (
    <section className="compare" aria-labelledby="compare-title">
      <h2 id="compare-title">Compare environments</h2>
      <ComparePickers
        environments={environments}
        fromId={fromId}
        toId={toId}
        onPick={pick}
        differencesOnly={differencesOnly}
        onDifferencesOnly={setDifferencesOnly}
      />
      {same ? <p className="hint">Pick two different environments.</p> : null}
      <ErrorLine errors={[comparison.error]} />
      {data ? <OutcomeLine outcome={outcome} to={data.to.name} /> : null}
      {data ? (
        <>
          <ComparedFlags
            comparison={data}
            differencesOnly={differencesOnly}
            selected={selected}
            conflicts={outcome.conflicts}
            canSelect={canWrite}
            onToggle={toggle}
            onRefresh={() => void refresh()}
          />
          <PromoteChosen
            projectId={props.projectId}
            comparison={data}
            flags={data.flags.filter((f) => selected.has(f.key) && promotable(f))}
            disabledReason={canWrite ? null : props.offline ? 'needs the service (offline)' : 'needs the editor role'}
            onPromoted={(keys) => {
              setSelected(new Set())
              setOutcome({ done: `Promoted ${keys.join(', ')} to ${data.to.name}.`, conflicts: [] })
            }}
            onConflicts={(conflicts) => setOutcome({ done: null, conflicts })}
          />
        </>
      ) : null}
    </section>
  )
}

function OutcomeLine(props: { outcome: Outcome; to: string }) {
  const { done, conflicts } = props.outcome
  if (done) {
    return (
      <p role="status" className="notice">
        {done}
      </p>
    )
  }
  if (conflicts.length === 0) return null
  return (
    <p role="alert" className="error">
      Nothing was promoted: {conflicts.length === 1 ? '1 flag' : `${conflicts.length} flags`} changed in {props.to}{' '}
      since you compared. Refresh to see them as they are now, then promote again.
    </p>
  )
}

function ComparePickers(props: {
  environments: Environment[]
  fromId: string
  toId: string
  onPick: (side: 'from' | 'to', id: string) => void
  differencesOnly: boolean
  onDifferencesOnly: (on: boolean) => void
}) {
  const { environments } = props
  return (
    <div className="compare-pick">
      <EnvironmentSelect
        label="From"
        value={props.fromId}
        environments={environments}
        onChange={(id) => props.onPick('from', id)}
      />
      <EnvironmentSelect
        label="To"
        value={props.toId}
        environments={environments}
        onChange={(id) => props.onPick('to', id)}
      />
      <label className="inline">
        <input
          type="checkbox"
          checked={props.differencesOnly}
          onChange={(e) => props.onDifferencesOnly(e.target.checked)}
        />
        Differences only
      </label>
    </div>
  )
}

function statusText(f: ComparedFlag, c: Comparison): string {
  if (f.status === 'same') return 'same in both'
  if (f.status === 'only_in_from') return `only in ${c.from.name}`
  if (f.status === 'only_in_to') return `only in ${c.to.name}`
  return `differs in ${f.differences.length === 1 ? '1 field' : `${f.differences.length} fields`}`
}

function ComparedFlags(props: {
  comparison: Comparison
  differencesOnly: boolean
  selected: ReadonlySet<string>
  conflicts: PromotionConflict[]
  canSelect: boolean
  onToggle: (key: string) => void
  onRefresh: () => void
}) {
  const { comparison: c } = props
  const shown = c.flags.filter((f) => !props.differencesOnly || f.status !== 'same')
  if (shown.length === 0) {
    return (
      <p className="hint">
        {c.flags.length === 0 ? 'Neither environment has flags yet.' : `${c.from.name} and ${c.to.name} are the same.`}
      </p>
    )
  }
  return (
    <ul className="compare-list" aria-label={`Flags in ${c.from.name} and ${c.to.name}`}>
      {shown.map((f) => (
        <li key={f.key} data-flag={f.key} data-status={f.status}>
          <div className="compare-head">
            {promotable(f) ? (
              <label className="inline">
                <input
                  type="checkbox"
                  checked={props.selected.has(f.key)}
                  disabled={!props.canSelect}
                  onChange={() => props.onToggle(f.key)}
                />
                <code>{f.key}</code>
              </label>
            ) : (
              <code>{f.key}</code>
            )}
            <span className={`badge ${f.status === 'same' ? '' : 'warn'}`}>{statusText(f, c)}</span>
          </div>
          <ConflictLine
            conflict={props.conflicts.find((x) => x.key === f.key)}
            to={c.to.name}
            onRefresh={props.onRefresh}
          />
          {f.status === 'different' || f.status === 'only_in_from' ? (
            <PromotionDiff
              diff={promotionRows(f)}
              from={c.from.name}
              target={c.to.name}
              label={`${f.key}: ${c.to.name} and ${c.from.name}`}
            />
          ) : null}
        </li>
      ))}
    </ul>
  )
}

function ConflictLine(props: { conflict: PromotionConflict | undefined; to: string; onRefresh: () => void }) {
  const { conflict } = props
  if (!conflict) return null
  const now = conflict.currentRevision === null ? 'deleted there' : `now at revision ${conflict.currentRevision}`
  return (
    <p className="conflict" data-conflict={conflict.key}>
      Changed in {props.to} since you compared ({now}).{' '}
      <button type="button" onClick={props.onRefresh}>
        Refresh
      </button>
    </p>
  )
}
