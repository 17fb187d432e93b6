import { useMemo, useState } from 'react'
import { ErrorLine } from './error-line.js'
import { EvaluationsFigure, ImpressionPickers, ImpressionTotals, LatestImpressions } from './impressions-sections.js'
import { shownEnvironmentId, shownFlagKey } from './impressions-view.js'
import { bucketImpressions } from './time-series.js'
import type { Environment } from './types.js'
import { useChartImpressions, useImpressionStats, useLatestImpressions } from './use-impressions.js'

/**
 * Per flag and environment: lifetime totals (the stats route), a chart of
 * evaluations over time per served value from the newest impressions, and
 * the latest impressions, filtered by user and value.
 */
export function ImpressionsPanel(props: { environments: Environment[] }) {
  // Derived, not a state initialized once: the environments may arrive after the panel mounts (a first visit
  // has none cached), and the panel must then show the default one instead of staying on none.
  const [chosenEnv, setEnvId] = useState('')
  const envId = shownEnvironmentId(props.environments, chosenEnv)
  const { stats, flagTypes, errors } = useImpressionStats(envId)
  const [chosenFlag, setFlagKey] = useState('')
  const flagKey =
    flagTypes === undefined ? '' : shownFlagKey(stats, flagTypes ? new Set(flagTypes.keys()) : undefined, chosenFlag)
  const [userFilter, setUserFilter] = useState('')
  const [valueFilter, setValueFilter] = useState('')
  const chart = useChartImpressions(envId, flagKey)
  const recent = chart.rows
  const { page: latest, error: latestError } = useLatestImpressions(envId, flagKey, {
    user: userFilter,
    value: valueFilter,
  })
  const series = useMemo(() => bucketImpressions(recent), [recent])
  const current = stats.find((s) => s.flag_key === flagKey)
  return (
    <div>
      <div className="toolbar">
        <h2>Impressions</h2>
      </div>
      <ImpressionPickers
        environments={props.environments}
        envId={envId}
        onEnvironment={setEnvId}
        stats={stats}
        flagTypes={flagTypes}
        flagKey={flagKey}
        onFlag={setFlagKey}
      />
      <ErrorLine errors={[...errors, chart.error, latestError]} />
      {stats.length === 0 ? <p className="hint">No impressions reported in this environment yet.</p> : null}
      {current ? <ImpressionTotals current={current} flagType={flagTypes?.get(current.flag_key)} /> : null}
      {series.times.length ? <EvaluationsFigure series={series} flagKey={flagKey} rows={recent.length} /> : null}
      {flagKey ? (
        <LatestImpressions
          latest={latest}
          userFilter={userFilter}
          onUserFilter={setUserFilter}
          valueFilter={valueFilter}
          onValueFilter={setValueFilter}
        />
      ) : null}
    </div>
  )
}
