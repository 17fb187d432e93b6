import { type UseQueryResult, useQueries, useQueryClient } from '@tanstack/react-query'
import { useEffect, useRef } from 'react'
import { api } from './api.js'
import type { FlagsByEnv } from './live-flags.js'
import { queryKeys } from './query-keys.js'
import type { Flag } from './types.js'

/**
 * The environments whose saved REST copy is behind the stream: a key the
 * other lacks or another revision. Both carry the change-log revision of a
 * flag's last change, and a segment edit re-sends flags with their own
 * revision, so equal revisions mean equal flags.
 */
export function staleEnvironments(stream: FlagsByEnv, saved: FlagsByEnv, envIds: readonly string[]): string[] {
  return envIds.filter((id) => {
    const live = stream.get(id) ?? new Map<string, Flag>()
    const copy = saved.get(id)
    if (!copy || copy.size !== live.size) return true
    for (const [key, flag] of live) if (copy.get(key)?.revision !== flag.revision) return true
    return false
  })
}

/** One environment's editable copy, as its query keeps it. */
interface EditableCopy {
  envId: string
  flags: ReadonlyMap<string, Flag>
}

/** The query of an environment's flags as the REST API answers them (the editor's copy, the impressions' types). */
export function editableFlagsQuery(envId: string) {
  return {
    queryKey: queryKeys.editableFlags(envId),
    queryFn: async (): Promise<EditableCopy> => {
      const list = await api<Flag[]>('GET', `/api/environments/${encodeURIComponent(envId)}/flags`)
      return { envId, flags: new Map(list.map((f) => [f.key, f])) }
    },
  }
}

/** The copies read so far as one map (environment → key → flag), and the first read that failed. */
function combine(results: Array<UseQueryResult<EditableCopy>>) {
  const saved = new Map<string, ReadonlyMap<string, Flag>>()
  for (const r of results) if (r.data) saved.set(r.data.envId, r.data.flags)
  return { saved: saved as FlagsByEnv, error: results.find((r) => r.error)?.error ?? null }
}

/**
 * The flags as the editor edits them, kept for offline use. The stream sends
 * the SDK view, with segment rules expanded into attribute rules; editing
 * that would replace a segment reference by a copy of today's members. So
 * this keeps `GET /api/environments/:id/flags` (references unexpanded) as a
 * persisted query per environment, read again whenever the stream shows a
 * change there; offline, the editor starts from this copy. `error`: a read that failed.
 */
export function useEditableFlags(envIds: readonly string[], stream: FlagsByEnv, offline: boolean) {
  const client = useQueryClient()
  const { saved, error } = useQueries({
    queries: envIds.map((envId) => ({
      ...editableFlagsQuery(envId),
      enabled: !offline,
      staleTime: Number.POSITIVE_INFINITY,
    })),
    combine,
  })
  // The stream's map of an environment each refresh was asked for: one read per stream change at most, even if
  // the two copies were ever to disagree for good.
  const askedFor = useRef(new Map<string, ReadonlyMap<string, Flag> | undefined>())
  useEffect(() => {
    if (offline) return
    for (const envId of staleEnvironments(stream, saved, envIds)) {
      const streamed = stream.get(envId)
      if (!saved.has(envId) || askedFor.current.get(envId) === streamed) continue
      askedFor.current.set(envId, streamed)
      void client.invalidateQueries({ queryKey: queryKeys.editableFlags(envId), exact: true })
    }
  }, [stream, saved, envIds, offline, client])
  return { saved, error }
}
