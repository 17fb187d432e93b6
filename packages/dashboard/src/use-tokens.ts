import { useQuery } from '@tanstack/react-query'
import { api } from './api.js'
import { queryKeys } from './query-keys.js'

export interface Token {
  id: number
  name: string
  prefix: string
  scope: 'read_only' | 'read_write'
  created_at: string
  last_used_at: string | null
  expires_at: string | null
  token?: string
}

/** The signed-in user's personal access tokens. */
export function useTokens() {
  return useQuery({ queryKey: queryKeys.tokens(), queryFn: () => api<Token[]>('GET', '/api/tokens') })
}
