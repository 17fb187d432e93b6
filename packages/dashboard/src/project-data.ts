import { useQueryClient } from '@tanstack/react-query'
import { useCallback, useEffect, useMemo, useRef } from 'react'
import { inOrder } from './environment-order.js'
import { type FlagsByEnv, LiveFlags } from './live-flags.js'
import { queryKeys } from './query-keys.js'
import { useSessionEventsContext } from './session-events.js'
import type { Environment, Member } from './types.js'
import { useEnvironments, useMembers } from './use-projects.js'

const NO_ENVIRONMENTS: Environment[] = []
const NO_MEMBERS: Member[] = []

/**
 * A project's environments and members (queries, persisted for the next
 * offline visit); `reload` reads both again, `setEnvironments` shows a new
 * order at once, before the service's answer.
 */
export function useProjectData(projectId: string) {
  const client = useQueryClient()
  const environments = useEnvironments(projectId)
  const members = useMembers(projectId)
  const setEnvironments = useCallback(
    (update: (envs: Environment[]) => Environment[]) =>
      client.setQueryData<Environment[]>(queryKeys.environments(projectId), (envs) => update(envs ?? [])),
    [client, projectId],
  )
  const reload = useCallback(async () => {
    await Promise.all([
      client.invalidateQueries({ queryKey: queryKeys.environments(projectId) }),
      client.invalidateQueries({ queryKey: queryKeys.members(projectId) }),
    ])
  }, [client, projectId])
  return {
    environments: environments.data ?? NO_ENVIRONMENTS,
    setEnvironments,
    members: members.data ?? NO_MEMBERS,
    error: environments.error ?? members.error,
    reload,
  }
}

/**
 * One stream per project page, keyed by the set of environments: a reorder
 * must not reconnect it (and bootstrap every flag again), a created or deleted
 * environment must. Its flags are kept in the query cache (`liveFlags`), so an
 * offline start shows them. Someone (another tab, another person) reordering the
 * environments is followed at once, then `reload` re-reads them.
 */
export function useProjectStream(
  projectId: string,
  offline: boolean,
  project: Pick<ReturnType<typeof useProjectData>, 'environments' | 'setEnvironments' | 'reload'>,
): LiveFlags {
  const { environments, setEnvironments, reload } = project
  const client = useQueryClient()
  const environmentSet = useMemo(() => environments.map((e) => e.id).sort(), [environments])
  const setKey = environmentSet.join(',')
  // biome-ignore lint/correctness/useExhaustiveDependencies: setKey stands for environmentSet's contents
  const live = useMemo(() => {
    const queryKey = queryKeys.liveFlags(projectId)
    const store = {
      read: () => client.getQueryData<FlagsByEnv>(queryKey),
      write: (flags: FlagsByEnv) => client.setQueryData(queryKey, flags),
    }
    return new LiveFlags(environmentSet, store)
  }, [setKey, projectId, client])
  useEffect(() => {
    live.start()
    return () => live.stop()
  }, [live])
  const sessionEvents = useSessionEventsContext()
  useEffect(() => (sessionEvents ? live.onSessionEvents(sessionEvents) : undefined), [live, sessionEvents])
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
