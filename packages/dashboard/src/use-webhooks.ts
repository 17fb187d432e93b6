import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query'
import { api } from './api.js'
import { queryKeys } from './query-keys.js'

/** A project's webhook as the service answers it; `secret` only in the answers that create or rotate it. */
export interface Webhook {
  id: string
  url: string
  events: string[]
  description: string | null
  enabled: boolean
  disabled_reason: string | null
  failing_since: string | null
  created_at: string
  secret?: string
}

export interface Delivery {
  id: string
  event_type: string
  status: 'pending' | 'delivered' | 'failed'
  attempts: number
  next_attempt_at: string | null
  last_status: number | null
  last_error: string | null
  last_attempt_at: string | null
  created_at: string
}

const webhooksKey = queryKeys.webhooks
const deliveriesKey = queryKeys.deliveries

/** The project's webhooks (server state through TanStack Query, refreshed every few seconds while shown), and the writes that change them; `enabled`: load them. */
export function useWebhooks(projectId: string, enabled = true) {
  const base = `/api/projects/${projectId}/webhooks`
  const client = useQueryClient()
  // Refreshed while shown: the delivery worker marks a webhook failing or disables it (a 410, failing too long).
  const list = useQuery({
    queryKey: webhooksKey(projectId),
    queryFn: () => api<Webhook[]>('GET', base),
    refetchInterval: 5000,
    enabled,
  })
  const refresh = () => client.invalidateQueries({ queryKey: webhooksKey(projectId) })
  const create = useMutation({
    mutationFn: (input: { url: string; events: string[]; description?: string }) => api<Webhook>('POST', base, input),
    onSuccess: refresh,
  })
  const update = useMutation({
    mutationFn: ({ id, ...patch }: { id: string; enabled?: boolean; rotate_secret?: true }) =>
      api<Webhook>('PATCH', `${base}/${id}`, patch),
    onSuccess: refresh,
  })
  const remove = useMutation({
    mutationFn: (id: string) => api<void>('DELETE', `${base}/${id}`),
    onSuccess: refresh,
  })
  return { list, create, update, remove }
}

/** One webhook's newest deliveries, refreshed every few seconds while shown; test pings and redeliveries. */
export function useDeliveries(projectId: string, webhookId: string) {
  const base = `/api/projects/${projectId}/webhooks/${webhookId}`
  const client = useQueryClient()
  const key = deliveriesKey(projectId, webhookId)
  const list = useQuery({
    queryKey: key,
    queryFn: () => api<{ deliveries: Delivery[]; next_cursor: string | null }>('GET', `${base}/deliveries?limit=50`),
    refetchInterval: 2000,
    enabled: webhookId !== '',
  })
  const refresh = () => client.invalidateQueries({ queryKey: key })
  const test = useMutation({ mutationFn: () => api<Delivery>('POST', `${base}/test`), onSuccess: refresh })
  const redeliver = useMutation({
    mutationFn: (deliveryId: string) => api<Delivery>('POST', `${base}/deliveries/${deliveryId}/redeliver`),
    onSuccess: refresh,
  })
  return { list, test, redeliver }
}
