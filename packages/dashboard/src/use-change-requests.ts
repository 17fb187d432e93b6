import { useQuery, useQueryClient } from '@tanstack/react-query'
import { useCallback, useState } from 'react'
import { ApiError, api } from './api.js'
import { type ApprovalConflict, approvalConflictOf } from './diff.js'
import { queryKeys } from './query-keys.js'
import type { ChangeRequest, Environment, Flag } from './types.js'

/** A change request as the project's list shows it: with its environment, and `stale` once the flag changed since. */
export type ListedRequest = ChangeRequest & { environment_id: string; stale?: boolean }

/** How a request is told apart across environments (ids are per environment). */
export const requestId = (r: ListedRequest) => `${r.environment_id}-${r.id}`

/** A flag as it is now, or undefined when it is gone (deleted since the request was filed). */
async function currentFlag(envId: string, key: string): Promise<Flag | undefined> {
  try {
    return await api<Flag>('GET', `/api/environments/${envId}/flags/${encodeURIComponent(key)}`)
  } catch (e) {
    if (e instanceof ApiError && e.status === 404) return undefined
    throw e
  }
}

/** Every environment's requests with `status`, newest first, and the flags they change as they are now. */
async function fetchRequests(environments: readonly Environment[], status: string) {
  const lists = await Promise.all(
    environments.map((env) =>
      api<ListedRequest[]>(
        'GET',
        `/api/environments/${env.id}/change-requests${status === 'all' ? '' : `?status=${status}`}`,
      ),
    ),
  )
  const requests = lists.flat().sort((a, b) => (a.created_at < b.created_at ? 1 : -1))
  const flags = new Map<string, Flag>()
  for (const r of requests) {
    const id = `${r.environment_id}/${r.flag_key}`
    if (flags.has(id)) continue
    const flag = await currentFlag(r.environment_id, r.flag_key)
    if (flag) flags.set(id, flag)
  }
  return { requests, flags }
}

const NONE = { requests: [] as ListedRequest[], flags: new Map<string, Flag>() }

/**
 * The change requests of every environment with `status` ('all': any), newest
 * first, and the flags they change as they are now (keyed `env/key`), so
 * each request shows what it would change. `load` reads them again.
 */
export function useChangeRequests(environments: Environment[], status: string) {
  const client = useQueryClient()
  const queryKey = queryKeys.changeRequests(
    environments.map((e) => e.id),
    status,
  )
  const query = useQuery({ queryKey, queryFn: () => fetchRequests(environments, status) })
  const load = useCallback(() => client.invalidateQueries({ queryKey }), [client, queryKey])
  const { requests, flags } = query.data ?? NONE
  return { requests, flags, error: query.error, load }
}

/**
 * Approve, reject or cancel a request, then list again. An approval the
 * service refuses as conflicting (409) is kept by request, shown as base /
 * now / requested so the reviewer can force it; other failures are `error`.
 */
export function useRequestActions(load: () => Promise<void>) {
  const [conflicts, setConflicts] = useState<ReadonlyMap<string, ApprovalConflict>>(new Map())
  const [error, setError] = useState<unknown>(null)
  async function act(request: ListedRequest, action: 'approve' | 'reject' | 'cancel', force = false) {
    setError(null)
    const id = requestId(request)
    const base = `/api/environments/${request.environment_id}/change-requests/${request.id}`
    try {
      if (action === 'cancel') await api('DELETE', base)
      else await api('POST', `${base}/${action}${force ? '?force=true' : ''}`, action === 'reject' ? {} : undefined)
      setConflicts((all) => withoutKey(all, id))
      await load()
    } catch (e) {
      const conflict = e instanceof ApiError && e.status === 409 ? approvalConflictOf(e.body) : undefined
      if (action === 'approve' && conflict) setConflicts((all) => new Map(all).set(id, conflict))
      else setError(e)
    }
  }
  return { conflicts, error, act }
}

function withoutKey<V>(map: ReadonlyMap<string, V>, key: string): ReadonlyMap<string, V> {
  if (!map.has(key)) return map
  const next = new Map(map)
  next.delete(key)
  return next
}
