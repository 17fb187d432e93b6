import { createContext, useContext } from 'react'
import type { FlagStore } from './flag-store.js'
import type { SyncClientLike } from './sync-types.js'

export interface FlagsyncContextValue {
  flags: FlagStore
  sync: SyncClientLike | undefined
}

export const FlagsyncContext = createContext<FlagsyncContextValue | null>(null)

export function useFlagsyncContext(hook: string): FlagsyncContextValue {
  const value = useContext(FlagsyncContext)
  if (!value) throw new Error(`${hook}() needs a <FlagsyncProvider> above it`)
  return value
}
