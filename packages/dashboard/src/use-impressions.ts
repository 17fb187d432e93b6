import type { FlagType } from '@flagsync/protocol'
import { useQuery } from '@tanstack/react-query'
import { api } from './api.js'
import { editableFlagsQuery } from './editable-flags.js'
import type { ImpressionStats } from './impressions-view.js'
import { queryKeys } from './query-keys.js'

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
const NO_STATS: ImpressionStats[] = []
const NO_PAGE: ImpressionPage = { items: [], total: 0 }

const base = (envId: string) => `/api/environments/${envId}/impressions`

/**
 * An environment's impression totals per flag (the stats route) and its flags' types by key: the types are
 * undefined while they load and null when they could not be read (any key with stats may then be shown).
 * `errors`: the reads that failed.
 */
export function useImpressionStats(envId: string) {
  const stats = useQuery({
    queryKey: queryKeys.impressionStats(envId),
    queryFn: () => api<ImpressionStats[]>('GET', `${base(envId)}/stats`),
    enabled: envId !== '',
  })
  const flags = useQuery({
    ...editableFlagsQuery(envId),
    enabled: envId !== '',
    select: (copy) => new Map<string, FlagType>([...copy.flags].map(([key, f]) => [key, f.flag_type])),
  })
  const flagTypes = flags.isError ? null : flags.data
  return { stats: stats.data ?? NO_STATS, flagTypes, errors: [stats.error, flags.error] }
}

/** The newest impressions of a flag (up to CHART_ROWS, for the chart); none while another flag's still load. */
export function useChartImpressions(envId: string, flagKey: string) {
  const query = useQuery({
    queryKey: queryKeys.chartImpressions(envId, flagKey),
    queryFn: async () => {
      const rows: Impression[] = []
      for (let offset = 0; offset < CHART_ROWS; offset += 200) {
        const page = await api<ImpressionPage>(
          'GET',
          `${base(envId)}?flag_key=${encodeURIComponent(flagKey)}&limit=200&offset=${offset}`,
        )
        rows.push(...page.items)
        if (page.items.length < 200) break
      }
      return rows
    },
    enabled: flagKey !== '',
  })
  return { rows: query.data ?? NO_ROWS, error: query.error }
}

/** The latest 20 impressions of a flag matching the user and served-value filters, and how many match. */
export function useLatestImpressions(envId: string, flagKey: string, filters: { user: string; value: string }) {
  const query: Record<string, string> = { flag_key: flagKey, limit: '20' }
  if (filters.user.trim()) query.user_id = filters.user.trim()
  if (filters.value.trim()) query.value = filters.value.trim()
  // Keyed by flag and filters: an answer for an earlier flag or filter never stands for the current one.
  const latest = useQuery({
    queryKey: queryKeys.impressions(envId, query),
    queryFn: () => api<ImpressionPage>('GET', `${base(envId)}?${new URLSearchParams(query)}`),
    enabled: flagKey !== '',
  })
  return { page: latest.data ?? NO_PAGE, error: latest.error }
}
