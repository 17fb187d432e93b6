import { lazy, Suspense, useEffect, useMemo, useState } from 'react'
import { api, errorText } from './api.js'
import { bucketImpressions } from './time-series.js'
import type { Environment } from './types.js'

const EvaluationsChart = lazy(() => import('./chart.js'))

interface Impression {
  id: number
  flag_key: string
  user_id: string | null
  value: string
  context: Record<string, unknown> | null
  evaluated_at: string
}
interface Stats {
  flag_key: string
  total: number
  true_count: number
  false_count: number
  unique_users: number
  last_seen: string
}

/** How many of the newest impressions the chart reads (4 pages of the list route's maximum 200). */
const CHART_ROWS = 800

/**
 * Per flag and environment: lifetime totals (the stats route), a chart of
 * evaluations over time per served value from the newest impressions, and
 * the latest impressions, filtered by user and value.
 */
export function ImpressionsPanel(props: { environments: Environment[] }) {
  const [envId, setEnvId] = useState(
    props.environments.find((e) => e.is_default)?.id ?? props.environments[0]?.id ?? '',
  )
  const [stats, setStats] = useState<Stats[]>([])
  const [flagKey, setFlagKey] = useState('')
  const [recent, setRecent] = useState<Impression[]>([])
  const [userFilter, setUserFilter] = useState('')
  const [valueFilter, setValueFilter] = useState('')
  const [latest, setLatest] = useState<{ items: Impression[]; total: number }>({ items: [], total: 0 })
  const [error, setError] = useState<string | null>(null)
  const base = `/api/environments/${envId}/impressions`

  useEffect(() => {
    if (!envId) return
    api<Stats[]>('GET', `${base}/stats`)
      .then((list) => {
        setStats(list)
        setFlagKey((key) => (list.some((s) => s.flag_key === key) ? key : (list[0]?.flag_key ?? '')))
      })
      .catch((e) => setError(errorText(e)))
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
      if (!cancelled) setRecent(rows)
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
    api<{ items: Impression[]; total: number }>('GET', `${base}?${query}`)
      .then(setLatest)
      .catch((e) => setError(errorText(e)))
  }, [flagKey, base, userFilter, valueFilter])

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
            {stats.map((s) => (
              <option key={s.flag_key}>{s.flag_key}</option>
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
          <div>
            <dt>true</dt>
            <dd>{current.true_count.toLocaleString('en')}</dd>
          </div>
          <div>
            <dt>false</dt>
            <dd>{current.false_count.toLocaleString('en')}</dd>
          </div>
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
