import { useCallback, useEffect, useState } from 'react'
import { ApiError, api, errorText } from './api.js'
import { type ApprovalConflict, approvalConflictOf } from './diff.js'
import type { ChangeRequest, Environment, Flag } from './types.js'

/** A change request as the project's list shows it: with its environment, and `stale` once the flag changed since. */
export type ListedRequest = ChangeRequest & { environment_id: string; stale?: boolean }

/** How a request is told apart across environments (ids are per environment). */
export const requestId = (r: ListedRequest) => `${r.environment_id}-${r.id}`

/**
 * The change requests of every environment with `status` ('all': any), newest
 * first, and the flags they change as they are now (keyed `env/key`), so
 * each request shows what it would change.
 */
export function useChangeRequests(environments: Environment[], status: string) {
  const [requests, setRequests] = useState<ListedRequest[]>([])
  const [flags, setFlags] = useState<Map<string, Flag>>(new Map())
  const [error, setError] = useState<string | null>(null)
  const load = useCallback(async () => {
    try {
      const lists = await Promise.all(
        environments.map((env) =>
          api<ListedRequest[]>(
            'GET',
            `/api/environments/${env.id}/change-requests${status === 'all' ? '' : `?status=${status}`}`,
          ),
        ),
      )
      const all = lists.flat().sort((a, b) => (a.created_at < b.created_at ? 1 : -1))
      const current = new Map<string, Flag>()
      for (const r of all) {
        const id = `${r.environment_id}/${r.flag_key}`
        if (current.has(id)) continue
        const flag = await api<Flag>(
          'GET',
          `/api/environments/${r.environment_id}/flags/${encodeURIComponent(r.flag_key)}`,
        ).catch(() => undefined)
        if (flag) current.set(id, flag)
      }
      setFlags(current)
      setRequests(all)
    } catch (e) {
      setError(errorText(e))
    }
  }, [environments, status])
  useEffect(() => {
    void load()
  }, [load])
  return { requests, flags, error, setError, load }
}

/**
 * Approve, reject or cancel a request, then list again. An approval the
 * service refuses as conflicting (409) is kept by request, shown as base /
 * now / requested so the reviewer can force it; other failures are `onError`'s.
 */
export function useRequestActions(load: () => Promise<void>, onError: (error: string | null) => void) {
  const [conflicts, setConflicts] = useState<ReadonlyMap<string, ApprovalConflict>>(new Map())
  async function act(request: ListedRequest, action: 'approve' | 'reject' | 'cancel', force = false) {
    onError(null)
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
      else onError(errorText(e))
    }
  }
  return { conflicts, act }
}

function withoutKey<V>(map: ReadonlyMap<string, V>, key: string): ReadonlyMap<string, V> {
  if (!map.has(key)) return map
  const next = new Map(map)
  next.delete(key)
  return next
}
