import { useQuery } from '@tanstack/react-query'
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
