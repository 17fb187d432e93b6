import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query'
import { api } from './api.js'
import { queryKeys } from './query-keys.js'
import type { Environment, Member, Project, SdkKey } from './types.js'

/** The projects the signed-in user sees; `enabled`: signed in. */
export function useProjects(enabled: boolean) {
  return useQuery({ queryKey: queryKeys.projects(), queryFn: () => api<Project[]>('GET', '/api/projects'), enabled })
}

/** A project's environments in the service's order. */
export function useEnvironments(projectId: string) {
  return useQuery({
    queryKey: queryKeys.environments(projectId),
    queryFn: () => api<Environment[]>('GET', `/api/projects/${projectId}/environments`),
  })
}

/** A project's members: one query for the role badge and the Members tab. */
export function useMembers(projectId: string) {
  return useQuery({
    queryKey: queryKeys.members(projectId),
    queryFn: () => api<Member[]>('GET', `/api/projects/${projectId}/members`),
  })
}

/** A project's SDK keys. */
export function useSdkKeys(projectId: string) {
  return useQuery({
    queryKey: queryKeys.sdkKeys(projectId),
    queryFn: () => api<SdkKey[]>('GET', `/api/projects/${projectId}/keys`),
  })
}

/** The project's segment keys, for the editor's segment rules (persisted, so the editor offers them offline too). */
export function useSegments(projectId: string) {
  return useQuery({
    queryKey: queryKeys.segments(projectId),
    queryFn: async () =>
      (await api<Array<{ key: string }>>('GET', `/api/projects/${encodeURIComponent(projectId)}/segments`)).map(
        (s) => s.key,
      ),
  })
}

/**
 * A write to a management resource (projects, environments, members, keys,
 * users, tokens: REST, these cannot be queued offline): `run` is the request,
 * and the queries under `refresh` are read again once it is done.
 */
export function useServiceWrite<Input, Output = unknown>(
  run: (input: Input) => Promise<Output>,
  refresh: readonly (readonly unknown[])[],
) {
  const client = useQueryClient()
  return useMutation({
    mutationFn: run,
    onSuccess: () => Promise.all(refresh.map((queryKey) => client.invalidateQueries({ queryKey }))),
  })
}
