import type { FlagType } from '@flagsync/protocol'
import { lazy, Suspense } from 'react'
import { EnvironmentSelect } from './environment-select.js'
import { type ImpressionStats, servedValueCounts } from './impressions-view.js'
import type { Series } from './time-series.js'
import type { Environment } from './types.js'
import type { ImpressionPage } from './use-impressions.js'

const EvaluationsChart = lazy(() => import('./chart.js'))

/** The environment and flag pickers; a key with stats that is no flag now says so. */
export function ImpressionPickers(props: {
  environments: Environment[]
  envId: string
  onEnvironment: (id: string) => void
  stats: ImpressionStats[]
  flagTypes: Map<string, FlagType> | null | undefined
  flagKey: string
  onFlag: (key: string) => void
}) {
  const { stats, flagTypes, flagKey } = props
  return (
    <div className="filters">
      <EnvironmentSelect
        label="Environment"
        value={props.envId}
        environments={props.environments}
        onChange={props.onEnvironment}
      />
      <label>
        Flag
        <select value={flagKey} onChange={(e) => props.onFlag(e.target.value)}>
          {flagKey === '' && stats.length > 0 ? <option value="">Choose a flag</option> : null}
          {stats.map((s) => (
            <option key={s.flag_key} value={s.flag_key}>
              {flagTypes && !flagTypes.has(s.flag_key) ? `${s.flag_key} (not a flag now)` : s.flag_key}
            </option>
          ))}
        </select>
      </label>
    </div>
  )
}

/** A flag's lifetime totals: evaluations, per served value, unique users, last seen. */
export function ImpressionTotals(props: { current: ImpressionStats; flagType: FlagType | undefined }) {
  const { current } = props
  return (
    <dl className="totals" aria-label={`Totals of ${current.flag_key}`}>
      <div>
        <dt>Evaluations</dt>
        <dd data-total="total">{current.total.toLocaleString('en')}</dd>
      </div>
      {servedValueCounts(current, props.flagType).map(({ value, count }) => (
        <div key={value} data-value={value}>
          <dt>
            <code>{value}</code>
          </dt>
          <dd>{count.toLocaleString('en')}</dd>
        </div>
      ))}
      <div>
        <dt>Unique users</dt>
        <dd data-total="users">{current.unique_users.toLocaleString('en')}</dd>
      </div>
      <div>
        <dt>Last seen</dt>
        <dd>{new Date(current.last_seen).toLocaleString()}</dd>
      </div>
    </dl>
  )
}

/** The chart of a flag's evaluations over time per served value, from its `rows` newest impressions. */
export function EvaluationsFigure(props: { series: Series; flagKey: string; rows: number }) {
  const { series } = props
  const minutes = Math.round(series.bucketMs / 60_000)
  return (
    <figure>
      <Suspense fallback={<p>Loading the chart…</p>}>
        <EvaluationsChart
          series={series}
          label={`Evaluations of ${props.flagKey} per ${minutes >= 60 ? `${minutes / 60} h` : `${minutes} min`}, by served value: ${[
            ...series.counts,
          ]
            .map(([v, c]) => `${v} ${c.reduce((a, b) => a + b, 0)}`)
            .join(', ')}`}
        />
      </Suspense>
      <figcaption className="hint">
        The newest {props.rows} impressions, {minutes >= 60 ? `${minutes / 60} h` : `${minutes} min`} per point.
      </figcaption>
    </figure>
  )
}

/** The latest impressions of a flag, filtered by user id and served value. */
export function LatestImpressions(props: {
  latest: ImpressionPage
  userFilter: string
  onUserFilter: (value: string) => void
  valueFilter: string
  onValueFilter: (value: string) => void
}) {
  return (
    <>
      <h3>Latest impressions</h3>
      <div className="filters">
        <label>
          User id
          <input value={props.userFilter} onChange={(e) => props.onUserFilter(e.target.value)} />
        </label>
        <label>
          Served value
          <input value={props.valueFilter} onChange={(e) => props.onValueFilter(e.target.value)} />
        </label>
      </div>
      <p className="hint" role="status">
        {props.latest.total} matching
      </p>
      <div className="table-wrap">
        <table className="list impressions">
          <thead>
            <tr>
              <th scope="col">When</th>
              <th scope="col">User</th>
              <th scope="col">Value</th>
              <th scope="col">Context</th>
            </tr>
          </thead>
          <tbody>
            {props.latest.items.map((i) => (
              <tr key={i.id}>
                <td>{new Date(i.evaluated_at).toLocaleString()}</td>
                <td>{i.user_id ?? 'anonymous'}</td>
                <td>
                  <code>{i.value}</code>
                </td>
                <td>
                  <code>{i.context ? JSON.stringify(i.context) : ''}</code>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </>
  )
}
