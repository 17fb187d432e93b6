import { useMemo } from 'react'
import { useLocation, useSearch } from 'wouter'
import { navigate as go } from 'wouter/use-browser-location'

/**
 * Where the dashboard is: `/`, `/tokens`, `/users`, `/account`, `/projects/:id` (and `/flags/:key`) with its tab
 * (`?tab=`).
 */
export interface Route {
  /** A page outside projects (`/tokens`, `/users`, `/account`), or null. */
  page: 'tokens' | 'users' | 'account' | null
  projectId: string | null
  tab: string
  flagKey: string | null
}

/** Follows a link in place (history API) rather than by a page load; nothing when it is where the page already is. */
export function navigate(path: string): void {
  if (path === location.pathname + location.search) return
  go(path)
}

export function projectPath(projectId: string, tab = 'flags'): string {
  return `/projects/${encodeURIComponent(projectId)}${tab === 'flags' ? '' : `?tab=${tab}`}`
}

const PAGES = ['tokens', 'users', 'account'] as const
const PROJECT = /^\/projects\/([^/]+)(?:\/flags\/([^/]+))?/
const decoded = (part: string | undefined) => (part ? decodeURIComponent(part) : null)

/** The route of the current URL (wouter's location hooks: re-rendered on navigate and on back/forward). */
export function useRoute(): Route {
  const [pathname] = useLocation()
  const search = useSearch()
  return useMemo(() => {
    const match = PROJECT.exec(pathname)
    return {
      page: PAGES.find((page) => pathname === `/${page}`) ?? null,
      projectId: decoded(match?.[1]),
      tab: new URLSearchParams(search).get('tab') ?? 'flags',
      flagKey: decoded(match?.[2]),
    }
  }, [pathname, search])
}
