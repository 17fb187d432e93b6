import { useMutation, useQueries, useQueryClient } from '@tanstack/react-query'
import { api } from './api.js'
import { queryKeys } from './query-keys.js'
import type { ArchivedFlag } from './types.js'

const flagPath = (projectId: string, key: string, action: string) =>
  `/api/projects/${encodeURIComponent(projectId)}/flags/${encodeURIComponent(key)}/${action}`

/** An archived flag across the environments it was archived from: key → environment id → its definition there. */
export type ArchivedByKey = ReadonlyMap<string, ReadonlyMap<string, ArchivedFlag>>

/** The project's archived flags, read per environment (`GET …/flags?archived=true`) and merged by key. */
export function useArchivedFlags(projectId: string, envIds: readonly string[], enabled: boolean) {
  return useQueries({
    queries: envIds.map((envId) => ({
      queryKey: [...queryKeys.archivedFlags(projectId), envId],
      queryFn: async () => ({
        envId,
        flags: await api<ArchivedFlag[]>('GET', `/api/environments/${encodeURIComponent(envId)}/flags?archived=true`),
      }),
      enabled,
    })),
    combine: (results) => {
      const byKey = new Map<string, Map<string, ArchivedFlag>>()
      for (const r of results) {
        for (const flag of r.data?.flags ?? []) {
          byKey.set(flag.key, (byKey.get(flag.key) ?? new Map()).set(r.data?.envId ?? '', flag))
        }
      }
      return { archived: byKey as ArchivedByKey, error: results.find((r) => r.error)?.error ?? null }
    },
  })
}

/**
 * The writes of a flag's project-level lifecycle: its tags and owner (every environment shows them), archive (out
 * of every environment at once) and restore. Each reads the flags and the archived list again once done.
 */
export function useFlagLifecycle(projectId: string) {
  const client = useQueryClient()
  const refresh = () =>
    Promise.all([
      client.invalidateQueries({ queryKey: ['environments'] }),
      client.invalidateQueries({ queryKey: queryKeys.archivedFlags(projectId) }),
    ])
  const setMeta = useMutation({
    mutationFn: (input: { key: string; tags: string[]; owner: number | null }) =>
      api('PATCH', flagPath(projectId, input.key, 'meta'), { tags: input.tags, owner: input.owner }),
    onSuccess: refresh,
  })
  const archive = useMutation({
    mutationFn: (key: string) => api('POST', flagPath(projectId, key, 'archive')),
    onSuccess: refresh,
  })
  const restore = useMutation({
    mutationFn: (key: string) => api('POST', flagPath(projectId, key, 'restore')),
    onSuccess: refresh,
  })
  return { setMeta, archive, restore }
}

/** Tags as typed in one field: split on commas and spaces, lower-cased, each once. */
export function tagsFromText(text: string): string[] {
  const tags = text
    .split(/[\s,]+/)
    .map((t) => t.trim().toLowerCase())
    .filter((t) => t !== '')
  return [...new Set(tags)]
}

/** "3 days ago", "today", or "never" for a time of the lifecycle (the table's columns). */
export function ago(iso: string | null | undefined, now: number): string {
  if (!iso) return 'never'
  const days = Math.floor((now - Date.parse(iso)) / 86_400_000)
  if (days <= 0) return 'today'
  return days === 1 ? 'yesterday' : `${days} days ago`
}
