import type { FlagType } from '@flagsync/protocol'
import { lazy, Suspense, useEffect, useMemo, useState } from 'react'
import { api, errorText } from './api.js'
import { type ImpressionStats, servedValueCounts, shownEnvironmentId, shownFlagKey } from './impressions-view.js'
import { bucketImpressions } from './time-series.js'
import type { Environment, Flag } from './types.js'

const EvaluationsChart = lazy(() => import('./chart.js'))

interface Impression {
  id: number
  flag_key: string
  user_id: string | null
  value: string
  context: Record<string, unknown> | null
  evaluated_at: string
}
/** How many of the newest impressions the chart reads (4 pages of the list route's maximum 200). */
const CHART_ROWS = 800
const NO_ROWS: Impression[] = []

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
  const [stats, setStats] = useState<ImpressionStats[]>([])
  /** The environment's flags by key (their types): undefined while they load, null when they could not. */
  const [flagTypes, setFlagTypes] = useState<Map<string, FlagType> | null>()
  const [chosenFlag, setFlagKey] = useState('')
  const flagKey =
    flagTypes === undefined ? '' : shownFlagKey(stats, flagTypes ? new Set(flagTypes.keys()) : undefined, chosenFlag)
  /** The newest impressions of a flag (for the chart), with the list route's base and flag they are of. */
  const [loaded, setRecent] = useState<{ of: string; rows: Impression[] }>({ of: '', rows: [] })
  const [userFilter, setUserFilter] = useState('')
  const [valueFilter, setValueFilter] = useState('')
  const [latest, setLatest] = useState<{ items: Impression[]; total: number }>({ items: [], total: 0 })
  const [error, setError] = useState<string | null>(null)
  const base = `/api/environments/${envId}/impressions`

  useEffect(() => {
    if (!envId) return
    let cancelled = false
    setStats([])
    setFlagTypes(undefined)
    api<ImpressionStats[]>('GET', `${base}/stats`)
      .then((list) => {
        if (!cancelled) setStats(list)
      })
      .catch((e) => setError(errorText(e)))
    api<Flag[]>('GET', `/api/environments/${encodeURIComponent(envId)}/flags`)
      .then((flags) => {
        if (!cancelled) setFlagTypes(new Map(flags.map((f) => [f.key, f.flag_type])))
      })
      .catch(() => {
        // Without the flags any key with stats may be shown; the stats' own error is the one to report.
        if (!cancelled) setFlagTypes(null)
      })
    return () => {
      cancelled = true
    }
  }, [envId, base])

  useEffect(() => {
    if (!flagKey) return
    let cancelled = false
    void (async () => {
      const rows: Impression[] = []
      for (let offset = 0; offset < CHART_ROWS; offset += 200) {
        const page = await api<{ items: Impression[]; total: number }>(
          'GET',
          `${base}?flag_key=${encodeURIComponent(flagKey)}&limit=200&offset=${offset}`,
        )
        rows.push(...page.items)
        if (page.items.length < 200) break
      }
      if (!cancelled) setRecent({ of: `${base} ${flagKey}`, rows })
    })().catch((e) => setError(errorText(e)))
    return () => {
      cancelled = true
    }
  }, [flagKey, base])

  useEffect(() => {
    if (!flagKey) return
    const query = new URLSearchParams({ flag_key: flagKey, limit: '20' })
    if (userFilter.trim()) query.set('user_id', userFilter.trim())
    if (valueFilter.trim()) query.set('value', valueFilter.trim())
    let cancelled = false
    api<{ items: Impression[]; total: number }>('GET', `${base}?${query}`)
      .then((page) => {
        // An answer for an earlier flag or filter that arrives late must not replace the current one.
        if (!cancelled) setLatest(page)
      })
      .catch((e) => setError(errorText(e)))
    return () => {
      cancelled = true
    }
  }, [flagKey, base, userFilter, valueFilter])

  // Only the rows of the flag shown: another flag's, still there while this one's load, would be charted as its.
  const recent = loaded.of === `${base} ${flagKey}` ? loaded.rows : NO_ROWS
  const series = useMemo(() => bucketImpressions(recent), [recent])
  const current = stats.find((s) => s.flag_key === flagKey)
  const minutes = Math.round(series.bucketMs / 60_000)
  return (
    <div>
      <div className="toolbar">
        <h2>Impressions</h2>
      </div>
      <div className="filters">
        <label>
          Environment
          <select value={envId} onChange={(e) => setEnvId(e.target.value)}>
            {props.environments.map((e) => (
              <option key={e.id} value={e.id}>
                {e.name}
              </option>
            ))}
          </select>
        </label>
        <label>
          Flag
          <select value={flagKey} onChange={(e) => setFlagKey(e.target.value)}>
            {flagKey === '' && stats.length > 0 ? <option value="">Choose a flag</option> : null}
            {stats.map((s) => (
              <option key={s.flag_key} value={s.flag_key}>
                {flagTypes && !flagTypes.has(s.flag_key) ? `${s.flag_key} (not a flag now)` : s.flag_key}
              </option>
            ))}
          </select>
        </label>
      </div>
      {error ? (
        <p role="alert" className="error">
          {error}
        </p>
      ) : null}
      {stats.length === 0 ? <p className="hint">No impressions reported in this environment yet.</p> : null}
      {current ? (
        <dl className="totals" aria-label={`Totals of ${current.flag_key}`}>
          <div>
            <dt>Evaluations</dt>
            <dd data-total="total">{current.total.toLocaleString('en')}</dd>
          </div>
          {servedValueCounts(current, flagTypes?.get(current.flag_key)).map(({ value, count }) => (
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
      ) : null}
      {series.times.length ? (
        <figure>
          <Suspense fallback={<p>Loading the chart…</p>}>
            <EvaluationsChart
              series={series}
              label={`Evaluations of ${flagKey} per ${minutes >= 60 ? `${minutes / 60} h` : `${minutes} min`}, by served value: ${[
                ...series.counts,
              ]
                .map(([v, c]) => `${v} ${c.reduce((a, b) => a + b, 0)}`)
                .join(', ')}`}
            />
          </Suspense>
          <figcaption className="hint">
            The newest {recent.length} impressions, {minutes >= 60 ? `${minutes / 60} h` : `${minutes} min`} per point.
          </figcaption>
        </figure>
      ) : null}
      {flagKey ? (
        <>
          <h3>Latest impressions</h3>
          <div className="filters">
            <label>
              User id
              <input value={userFilter} onChange={(e) => setUserFilter(e.target.value)} />
            </label>
            <label>
              Served value
              <input value={valueFilter} onChange={(e) => setValueFilter(e.target.value)} />
            </label>
          </div>
          <p className="hint" role="status">
            {latest.total} matching
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
                {latest.items.map((i) => (
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
      ) : null}
    </div>
  )
}
