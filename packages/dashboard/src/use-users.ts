import { useInfiniteQuery, useQuery } from '@tanstack/react-query'
import { api } from './api.js'
import { queryKeys } from './query-keys.js'
import type { Role } from './types.js'

export interface User {
  id: number
  email: string
  name: string
  role: Role
  created_at: string
}

/** The workspace's users: one query for the Users page and the Members tab's "Add member" list. */
export function useUsers() {
  return useQuery({ queryKey: queryKeys.users(), queryFn: () => api<User[]>('GET', '/api/users') })
}

/** One entry of the people audit (`GET /api/users/audit`): who changed whose role, name or password, and when. */
export type PeopleAuditEntry =
  | (PeopleAuditBase & {
      action: 'user.updated'
      details: { role?: { from: Role; to: Role }; name?: { from: string; to: string } }
    })
  | (PeopleAuditBase & { action: 'user.password_reset'; details: { sessions_ended: number; tokens_revoked: number } })
  | (PeopleAuditBase & { action: 'user.password_changed'; details: { sessions_ended: number } })
  | (PeopleAuditBase & {
      action: 'user.created' | 'user.deleted'
      details: { name: string; email: string; role: Role }
    })

interface PeopleAuditBase {
  id: number
  at: string
  actor: number
  target_user_id: number
}

interface PeopleAuditPage {
  entries: PeopleAuditEntry[]
  nextCursor: string | null
}

const PEOPLE_AUDIT_PAGE = 20

/** The people audit, newest first, older pages on request; for workspace admins (others get 403: not asked). */
export function usePeopleAudit(enabled: boolean) {
  return useInfiniteQuery({
    queryKey: queryKeys.peopleAudit(),
    queryFn: ({ pageParam }) =>
      api<PeopleAuditPage>(
        'GET',
        `/api/users/audit?limit=${PEOPLE_AUDIT_PAGE}${pageParam === null ? '' : `&cursor=${encodeURIComponent(pageParam)}`}`,
      ),
    initialPageParam: null as string | null,
    getNextPageParam: (last) => last.nextCursor,
    enabled,
  })
}
