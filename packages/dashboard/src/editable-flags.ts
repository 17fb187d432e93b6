import { useEffect, useRef, useState } from 'react'
import { api } from './api.js'
import type { Flag } from './types.js'

/** Where the project's segment keys are kept for the editor's segment rules offline. */
const segmentsCacheKey = (projectId: string) => `flagsync.dashboard.segments.${projectId}`

/** The segment keys an earlier online visit saved (empty when none). */
function savedSegments(projectId: string): string[] {
  try {
    const list: unknown = JSON.parse(localStorage.getItem(segmentsCacheKey(projectId)) ?? '[]')
    return Array.isArray(list) ? list.filter((x): x is string => typeof x === 'string') : []
  } catch {
    return []
  }
}

/** Fetches the project's segment keys and saves them; offline, the saved ones. */
export async function loadSegments(projectId: string): Promise<string[]> {
  try {
    const list = await api<Array<{ key: string }>>('GET', `/api/projects/${encodeURIComponent(projectId)}/segments`)
    const keys = list.map((s) => s.key)
    localStorage.setItem(segmentsCacheKey(projectId), JSON.stringify(keys))
    return keys
  } catch {
    return savedSegments(projectId)
  }
}

type FlagsByEnv = ReadonlyMap<string, ReadonlyMap<string, Flag>>

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

/**
 * The flags as the editor edits them, kept for offline use. The stream sends
 * the SDK view, with segment rules expanded into attribute rules; editing
 * that would replace a segment reference by a copy of today's members. So
 * while online this keeps `GET /api/environments/:id/flags` (references
 * unexpanded) in localStorage, fetched again for an environment whenever the
 * stream shows a change there; offline, the editor starts from this copy.
 */
export function useEditableFlags(
  projectId: string,
  envIds: readonly string[],
  stream: FlagsByEnv,
  offline: boolean,
): FlagsByEnv {
  const cacheKey = `flagsync.dashboard.editable.${projectId}`
  const [saved, setSaved] = useState<FlagsByEnv>(() => readSaved(cacheKey))
  const inFlight = useRef(new Set<string>())
  // The stream's map of an environment each fetch answered: one fetch per stream change at most, even if the
  // two copies were ever to disagree for good.
  const fetchedFor = useRef(new Map<string, ReadonlyMap<string, Flag> | undefined>())
  useEffect(() => {
    // The editor can then offer the project's segments offline too.
    if (!offline) void loadSegments(projectId)
  }, [projectId, offline])
  useEffect(() => {
    if (offline) return
    for (const envId of staleEnvironments(stream, saved, envIds)) {
      if (inFlight.current.has(envId)) continue
      const streamed = stream.get(envId)
      if (fetchedFor.current.has(envId) && fetchedFor.current.get(envId) === streamed) continue
      fetchedFor.current.set(envId, streamed)
      inFlight.current.add(envId)
      api<Flag[]>('GET', `/api/environments/${encodeURIComponent(envId)}/flags`)
        .then((list) =>
          setSaved((before) => {
            const next = new Map(before).set(envId, new Map(list.map((f) => [f.key, f])))
            writeSaved(cacheKey, next)
            return next
          }),
        )
        // Offline or the environment went away: the copy stays as it was, and the next change tries again.
        .catch(() => fetchedFor.current.delete(envId))
        .finally(() => inFlight.current.delete(envId))
    }
  }, [stream, saved, envIds, offline, cacheKey])
  return saved
}

function readSaved(key: string): Map<string, Map<string, Flag>> {
  try {
    const raw = JSON.parse(localStorage.getItem(key) ?? '{}') as Record<string, Flag[]>
    return new Map(Object.entries(raw).map(([env, list]) => [env, new Map(list.map((f) => [f.key, f]))]))
  } catch {
    return new Map()
  }
}

function writeSaved(key: string, flags: FlagsByEnv): void {
  try {
    localStorage.setItem(
      key,
      JSON.stringify(Object.fromEntries([...flags].map(([env, byKey]) => [env, [...byKey.values()]]))),
    )
  } catch {
    // A full or disabled storage only costs the offline editor its starting point.
  }
}
