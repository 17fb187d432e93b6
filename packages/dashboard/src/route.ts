import { useSyncExternalStore } from 'react'

/** Where the dashboard is: `/`, `/projects/:id` and its tab (`?tab=`). Plain history API, no router library. */
export interface Route {
  /** A page outside projects (`/tokens`, `/users`), or null. */
  page: 'tokens' | 'users' | null
  projectId: string | null
  tab: string
  flagKey: string | null
}

function read(): Route {
  const match = /^\/projects\/([^/]+)(?:\/flags\/([^/]+))?/.exec(location.pathname)
  const params = new URLSearchParams(location.search)
  return {
    page: location.pathname === '/tokens' ? 'tokens' : location.pathname === '/users' ? 'users' : null,
    projectId: match?.[1] ? decodeURIComponent(match[1]) : null,
    tab: params.get('tab') ?? 'flags',
    flagKey: match?.[2] ? decodeURIComponent(match[2]) : null,
  }
}

let current = read()
const listeners = new Set<() => void>()
const notify = () => {
  current = read()
  for (const l of listeners) l()
}
window.addEventListener('popstate', notify)

export function navigate(path: string): void {
  if (path === location.pathname + location.search) return
  history.pushState(null, '', path)
  notify()
}

export function projectPath(projectId: string, tab = 'flags'): string {
  return `/projects/${encodeURIComponent(projectId)}${tab === 'flags' ? '' : `?tab=${tab}`}`
}

export function useRoute(): Route {
  return useSyncExternalStore(
    (l) => {
      listeners.add(l)
      return () => listeners.delete(l)
    },
    () => current,
  )
}
