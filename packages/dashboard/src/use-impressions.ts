import type { FlagType } from '@flagsync/protocol'
import { useEffect, useState } from 'react'
import { api, errorText } from './api.js'
import type { ImpressionStats } from './impressions-view.js'
import type { Flag } from './types.js'

/** One impression as the list route returns it. */
export interface Impression {
  id: number
  flag_key: string
  user_id: string | null
  value: string
  context: Record<string, unknown> | null
  evaluated_at: string
}

/** A page of the list route. */
export interface ImpressionPage {
  items: Impression[]
  total: number
}

/** How many of the newest impressions the chart reads (4 pages of the list route's maximum 200). */
const CHART_ROWS = 800
const NO_ROWS: Impression[] = []

/**
 * An environment's impression totals per flag (the stats route, `base` + `/stats`) and its flags' types by key:
 * the types are undefined while they load and null when they could not be read. Both reset when `envId` changes.
 */
export function useImpressionStats(envId: string, base: string, setError: (error: string) => void) {
  const [stats, setStats] = useState<ImpressionStats[]>([])
  const [flagTypes, setFlagTypes] = useState<Map<string, FlagType> | null>()
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
  }, [envId, base, setError])
  return { stats, flagTypes }
}

/** The newest impressions of a flag (up to CHART_ROWS, for the chart); none while another flag's are still shown. */
export function useChartImpressions(base: string, flagKey: string, setError: (error: string) => void): Impression[] {
  /** The rows, with the list route's base and flag they are of. */
  const [loaded, setRecent] = useState<{ of: string; rows: Impression[] }>({ of: '', rows: [] })
  useEffect(() => {
    if (!flagKey) return
    let cancelled = false
    void (async () => {
      const rows: Impression[] = []
      for (let offset = 0; offset < CHART_ROWS; offset += 200) {
        const page = await api<ImpressionPage>(
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
  }, [flagKey, base, setError])
  // Only the rows of the flag shown: another flag's, still there while this one's load, would be charted as its.
  return loaded.of === `${base} ${flagKey}` ? loaded.rows : NO_ROWS
}

/** The latest 20 impressions of a flag matching the user and served-value filters, and how many match. */
export function useLatestImpressions(
  base: string,
  flagKey: string,
  filters: { user: string; value: string },
  setError: (error: string) => void,
): ImpressionPage {
  const [latest, setLatest] = useState<ImpressionPage>({ items: [], total: 0 })
  const { user, value } = filters
  useEffect(() => {
    if (!flagKey) return
    const query = new URLSearchParams({ flag_key: flagKey, limit: '20' })
    if (user.trim()) query.set('user_id', user.trim())
    if (value.trim()) query.set('value', value.trim())
    let cancelled = false
    api<ImpressionPage>('GET', `${base}?${query}`)
      .then((page) => {
        // An answer for an earlier flag or filter that arrives late must not replace the current one.
        if (!cancelled) setLatest(page)
      })
      .catch((e) => setError(errorText(e)))
    return () => {
      cancelled = true
    }
  }, [flagKey, base, user, value, setError])
  return latest
}
