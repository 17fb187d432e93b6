import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query'
import { useCallback, useSyncExternalStore } from 'react'
import { ApiError, api } from './api.js'
import { queryKeys } from './query-keys.js'
import { navigate } from './route.js'
import type { Me } from './types.js'

export type Session =
  | { state: 'loading' }
  | { state: 'signed-out'; workspaceName: string }
  | { state: 'in'; me: Me; offline: boolean }

/** The first wait before the session is asked again while the service does not answer; it doubles up to the cap. */
const RECHECK_FIRST_MS = 500
const RECHECK_MAX_MS = 30_000

const unanswered = (error: unknown) => error instanceof ApiError && error.offline

/** The signed-in user, or null when the service says nobody is (401). */
async function fetchMe(): Promise<Me | null> {
  try {
    return await api<Me>('GET', '/api/auth/me')
  } catch (error) {
    if (error instanceof ApiError && error.status === 401) return null
    throw error
  }
}

function subscribeOnline(listener: () => void) {
  window.addEventListener('online', listener)
  window.addEventListener('offline', listener)
  return () => {
    window.removeEventListener('online', listener)
    window.removeEventListener('offline', listener)
  }
}

/** The browser's own verdict on the network. */
function useOnline(): boolean {
  return useSyncExternalStore(subscribeOnline, () => navigator.onLine)
}

/**
 * Who is signed in (the `me` query), asked again when the browser comes back
 * online and, while the service does not answer, again after 0.5 s, 1 s, 2 s …
 * (at most 30 s apart): the `online` event can come before requests get
 * through, or not at all when the service, not the network, was away.
 * Without a network the persisted user opens the saved, read-only view.
 */
export function useSession() {
  const online = useOnline()
  const me = useQuery({
    queryKey: queryKeys.me(),
    queryFn: fetchMe,
    retry: (_failures, error) => unanswered(error),
    retryDelay: (attempt) => Math.min(RECHECK_FIRST_MS * 2 ** attempt, RECHECK_MAX_MS),
  })
  const noAnswer = unanswered(me.failureReason) || me.fetchStatus === 'paused'
  const workspace = useQuery({
    queryKey: queryKeys.workspace(),
    queryFn: () => api<{ workspace_name: string }>('GET', '/api/auth/workspace'),
    enabled: me.data === null,
  })
  let session: Session
  if (me.data) session = { state: 'in', me: me.data, offline: noAnswer }
  else if (me.data === null || me.isError || (noAnswer && !me.isFetching))
    session = { state: 'signed-out', workspaceName: workspace.data?.workspace_name ?? '' }
  else session = { state: 'loading' }
  const signedIn = useSignedIn()
  const signOut = useSignOut()
  return { session, online, signedIn, signOut, error: me.error ?? workspace.error }
}

/** After the sign-in form: the user is the `me` query's answer, persisted for a reload without a network. */
function useSignedIn() {
  const client = useQueryClient()
  return useCallback((me: Me) => client.setQueryData(queryKeys.me(), me), [client])
}

/** Signs out, then forgets every query (and with them the workspace data persisted for offline visits). */
function useSignOut() {
  const client = useQueryClient()
  return useMutation({
    mutationFn: () => api('POST', '/api/auth/logout'),
    onSuccess: async () => {
      navigate('/')
      client.removeQueries({ predicate: (query) => query.queryKey[0] !== 'session' })
      await client.resetQueries({ queryKey: ['session'] })
    },
  })
}
