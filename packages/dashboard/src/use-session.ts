import { useCallback, useEffect, useState } from 'react'
import { ApiError, api } from './api.js'
import { readCached, writeCached } from './local-cache.js'
import { navigate } from './route.js'
import type { Me, Project } from './types.js'
import { USERS_CACHE } from './users.js'

const ME_CACHE = 'flagsync.dashboard.me'
const PROJECTS_CACHE = 'flagsync.dashboard.projects'

export type Session =
  | { state: 'loading' }
  | { state: 'signed-out'; workspaceName: string }
  | { state: 'in'; me: Me; offline: boolean }

/** The first wait before the session is asked again while the service does not answer; it doubles up to the cap. */
const RECHECK_FIRST_MS = 500
const RECHECK_MAX_MS = 30_000

/**
 * Who is signed in, asked of the service again whenever the browser comes
 * back online, and again with backoff while the browser says online but the
 * service has not answered: the `online` event can come before requests get
 * through, or not at all when the service, not the network, was away.
 * Without a network the saved user opens the saved, read-only view instead
 * of the sign-in form; `online` is the browser's own verdict.
 */
export function useSession() {
  const [session, setSession] = useState<Session>({ state: 'loading' })
  const [online, setOnline] = useState(navigator.onLine)
  /** Resolves false when the service did not answer (the saved session stays, marked offline). */
  const loadSession = useCallback(async (): Promise<boolean> => {
    try {
      const me = await api<Me>('GET', '/api/auth/me')
      writeCached(ME_CACHE, me)
      setSession({ state: 'in', me, offline: false })
      return true
    } catch (error) {
      const saved = readCached<Me>(ME_CACHE)
      if (error instanceof ApiError && error.offline && saved) {
        setSession({ state: 'in', me: saved, offline: true })
        return false
      }
      localStorage.removeItem(ME_CACHE)
      const workspace = await api<{ workspace_name: string }>('GET', '/api/auth/workspace').catch(() => ({
        workspace_name: '',
      }))
      setSession({ state: 'signed-out', workspaceName: workspace.workspace_name })
      return true
    }
  }, [])
  useEffect(() => {
    void loadSession()
    const up = () => {
      setOnline(true)
      void loadSession()
    }
    const down = () => setOnline(false)
    window.addEventListener('online', up)
    window.addEventListener('offline', down)
    return () => {
      window.removeEventListener('online', up)
      window.removeEventListener('offline', down)
    }
  }, [loadSession])
  useRecheck(session.state === 'in' && session.offline && online, loadSession)
  const signedIn = useSignedIn(setSession)
  const signOut = useSignOut(loadSession)
  return { session, online, signedIn, signOut }
}

/** While `unanswered`, asks again after 0.5 s, 1 s, 2 s … (at most 30 s apart) until the service answers. */
function useRecheck(unanswered: boolean, loadSession: () => Promise<boolean>) {
  useEffect(() => {
    if (!unanswered) return
    let delay = RECHECK_FIRST_MS
    let timer: ReturnType<typeof setTimeout> | undefined
    let stopped = false
    const schedule = () => {
      timer = setTimeout(async () => {
        if ((await loadSession()) || stopped) return
        delay = Math.min(delay * 2, RECHECK_MAX_MS)
        schedule()
      }, delay)
    }
    schedule()
    return () => {
      stopped = true
      clearTimeout(timer)
    }
  }, [unanswered, loadSession])
}

/** After the sign-in form: kept so that a reload without a network opens the saved, read-only view. */
function useSignedIn(setSession: (session: Session) => void) {
  return useCallback(
    (me: Me) => {
      writeCached(ME_CACHE, me)
      setSession({ state: 'in', me, offline: false })
    },
    [setSession],
  )
}

/** Signs out and forgets the workspace data saved for offline visits. */
function useSignOut(loadSession: () => Promise<boolean>) {
  return useCallback(async () => {
    await api('POST', '/api/auth/logout').catch(() => {})
    localStorage.removeItem(ME_CACHE)
    localStorage.removeItem(PROJECTS_CACHE)
    localStorage.removeItem(USERS_CACHE)
    navigate('/')
    await loadSession()
  }, [loadSession])
}

/** The projects the signed-in user sees, saved for offline visits; loaded once signed in. */
export function useProjects(signedIn: boolean) {
  const [projects, setProjects] = useState<Project[]>(() => readCached<Project[]>(PROJECTS_CACHE) ?? [])
  const loadProjects = useCallback(async () => {
    try {
      const list = await api<Project[]>('GET', '/api/projects')
      writeCached(PROJECTS_CACHE, list)
      setProjects(list)
    } catch (error) {
      if (!(error instanceof ApiError && error.offline)) throw error
    }
  }, [])
  useEffect(() => {
    if (signedIn) void loadProjects()
  }, [signedIn, loadProjects])
  return { projects, loadProjects }
}
