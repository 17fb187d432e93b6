import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query'
import { api } from './api.js'
import { queryKeys } from './query-keys.js'

export type ScheduleStatus = 'pending' | 'applied' | 'failed' | 'cancelled'

/** A scheduled flag change as the service answers it. */
export interface Schedule {
  id: number
  environment_id: string
  flag_key: string
  patch: Record<string, unknown>
  run_at: string
  status: ScheduleStatus
  created_by: string
  created_at: string
  applied_at: string | null
  result: { changed?: boolean; late_ms?: number; reason?: string; cancelled_by?: string } | null
  requires_approval: boolean
  approved_by: string | null
  approved_at: string | null
  overdue: boolean
}

const schedulesKey = queryKeys.schedules

/**
 * An environment's schedules (server state through TanStack Query, refreshed every few seconds while shown, so an
 * applied one moves to the past table), and the writes that change them.
 */
export function useSchedules(envId: string) {
  const client = useQueryClient()
  const key = schedulesKey(envId)
  const list = useQuery({
    queryKey: key,
    queryFn: () => api<Schedule[]>('GET', `/api/environments/${envId}/schedules`),
    refetchInterval: 2000,
    enabled: envId !== '',
  })
  const refresh = () => client.invalidateQueries({ queryKey: key })
  const cancel = useMutation({
    mutationFn: (id: number) => api<Schedule>('DELETE', `/api/environments/${envId}/schedules/${id}`),
    onSuccess: refresh,
  })
  const approve = useMutation({
    mutationFn: (id: number) => api<Schedule>('POST', `/api/environments/${envId}/schedules/${id}/approve`),
    onSuccess: refresh,
  })
  return { list, cancel, approve }
}

/** Schedules a merge patch of one flag; the environment's list refreshes once it is stored. */
export function useCreateSchedule(envId: string, flagKey: string) {
  const client = useQueryClient()
  return useMutation({
    mutationFn: (input: { patch: Record<string, unknown>; run_at: string }) =>
      api<Schedule>('POST', `/api/environments/${envId}/flags/${encodeURIComponent(flagKey)}/schedules`, input),
    onSuccess: () => client.invalidateQueries({ queryKey: schedulesKey(envId) }),
  })
}
