import { useCallback, useEffect, useMemo, useRef, useState } from 'react'
import { ApiError, api, errorText } from './api.js'
import { inOrder } from './environment-order.js'
import { LiveFlags } from './live-flags.js'
import { readCached, writeCached } from './local-cache.js'
import type { Environment, Member } from './types.js'

/**
 * A project's environments and members from the service, saved for the next
 * offline visit and read from there first; offline, `reload` keeps the saved
 * ones without an error.
 */
export function useProjectData(projectId: string) {
  const envsKey = `flagsync.dashboard.envs.${projectId}`
  const membersKey = `flagsync.dashboard.members.${projectId}`
  const [environments, setEnvironments] = useState<Environment[]>(() => readCached<Environment[]>(envsKey) ?? [])
  const [members, setMembers] = useState<Member[]>(() => readCached<Member[]>(membersKey) ?? [])
  const [error, setError] = useState<string | null>(null)
  const reload = useCallback(async () => {
    try {
      const [envs, mems] = await Promise.all([
        api<Environment[]>('GET', `/api/projects/${projectId}/environments`),
        api<Member[]>('GET', `/api/projects/${projectId}/members`),
      ])
      writeCached(envsKey, envs)
      writeCached(membersKey, mems)
      setEnvironments(envs)
      setMembers(mems)
    } catch (e) {
      if (!(e instanceof ApiError && e.offline)) setError(errorText(e))
    }
  }, [projectId, envsKey, membersKey])
  useEffect(() => {
    void reload()
  }, [reload])
  return { environments, setEnvironments, members, error, reload }
}

/**
 * One stream per project page, keyed by the set of environments: a reorder
 * must not reconnect it (and bootstrap every flag again), a created or deleted
 * environment must. Someone (another tab, another person) reordering the
 * environments is followed at once, then `reload` re-reads them.
 */
export function useProjectStream(
  projectId: string,
  offline: boolean,
  project: Pick<ReturnType<typeof useProjectData>, 'environments' | 'setEnvironments' | 'reload'>,
): LiveFlags {
  const { environments, setEnvironments, reload } = project
  const environmentSet = useMemo(() => environments.map((e) => e.id).sort(), [environments])
  const setKey = environmentSet.join(',')
  // biome-ignore lint/correctness/useExhaustiveDependencies: setKey stands for environmentSet's contents
  const live = useMemo(
    () => new LiveFlags(environmentSet, `flagsync.dashboard.flags.${projectId}`),
    [setKey, projectId],
  )
  useEffect(() => {
    live.start()
    return () => live.stop()
  }, [live])
  const wasOffline = useRef(offline)
  useEffect(() => {
    if (wasOffline.current && !offline) live.reconnect()
    wasOffline.current = offline
  }, [live, offline])
  useEffect(() => {
    if (offline) return
    return live.onEnvironmentOrder(projectId, (ids) => {
      setEnvironments((envs) => inOrder(envs, ids))
      void reload()
    })
  }, [live, projectId, offline, reload, setEnvironments])
  return live
}
