import type { ClientFlag, FlagClient, FlagClientStatus } from '@flagsync/flag-client'
import { useSyncExternalStore } from 'react'
import { useFlagsyncContext } from './context.js'
import type { FlagView } from './flag-store.js'

const sortedViews = new WeakMap<FlagView, readonly ClientFlag[]>()

/** One sorted array per view: the same array until the flags change. */
function sorted(view: FlagView): readonly ClientFlag[] {
  let flags = sortedViews.get(view)
  if (!flags) {
    flags = [...view.values()].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0))
    sortedViews.set(view, flags)
  }
  return flags
}

/** Every flag as it reads now (the server's set with this client's edits on top), sorted by key. */
export function useFlags(): readonly ClientFlag[] {
  const { flags } = useFlagsyncContext('useFlags')
  return useSyncExternalStore(
    flags.subscribe,
    () => sorted(flags.getSnapshot()),
    () => sorted(flags.getServerSnapshot()),
  )
}

/** The flag client of the provider (for edits: `updateFlag`, `createFlag`, `deleteFlag`); undefined on the server and before a provider-made client exists. */
export function useFlagClient(): FlagClient | undefined {
  return useFlagsyncContext('useFlagClient').flags.client
}

const NO_CLIENT: FlagClientStatus = {
  state: 'connecting',
  source: 'none',
  environmentId: null,
  failures: 0,
  lastError: null,
}

/** The flag client's connection: `connecting`, `live`, `reconnecting`, `polling`, `offline` or `closed`, and where the flags came from. */
export function useFlagStatus(): FlagClientStatus {
  const { flags } = useFlagsyncContext('useFlagStatus')
  const client = flags.client
  return useSyncExternalStore(
    flags.subscribe,
    () => client?.status() ?? NO_CLIENT,
    () => NO_CLIENT,
  )
}
