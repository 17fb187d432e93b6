import type { SyncClient } from '@flagsync/sync-client'
import { createContext, useContext } from 'react'
import type { FlagStore } from './flag-store.js'

export interface FlagsyncContextValue {
  flags: FlagStore
  sync: SyncClient | undefined
}

export const FlagsyncContext = createContext<FlagsyncContextValue | null>(null)

export function useFlagsyncContext(hook: string): FlagsyncContextValue {
  const value = useContext(FlagsyncContext)
  if (!value) throw new Error(`${hook}() needs a <FlagsyncProvider> above it`)
  return value
}
