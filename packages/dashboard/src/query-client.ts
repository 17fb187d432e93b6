import { createSyncStoragePersister } from '@tanstack/query-sync-storage-persister'
import { QueryClient } from '@tanstack/react-query'
import type { PersistQueryClientOptions } from '@tanstack/react-query-persist-client'
import { ApiError } from './api.js'
import { persisted } from './query-keys.js'

/** Where the persister keeps the dashboard's server state between visits (cleared on sign-out). */
const CACHE_KEY = 'flagsync.dashboard.cache'
/** How long a saved copy stays usable offline; queries are kept in memory as long, or the persister would drop them. */
const MAX_AGE_MS = 7 * 24 * 60 * 60 * 1000

/** A request that got no answer is retried (the service may be back); one the service refused is not. */
const retryUnanswered = (failures: number, error: unknown) => error instanceof ApiError && error.offline && failures < 1

export function createQueryClient(): QueryClient {
  return new QueryClient({
    defaultOptions: {
      queries: { retry: retryUnanswered, refetchOnWindowFocus: false, gcTime: MAX_AGE_MS },
      mutations: { retry: false },
    },
  })
}

// The flags of the stream and the editable copy are kept as maps (environment → key → flag): JSON keeps them tagged.
const replacer = (_key: string, value: unknown) => (value instanceof Map ? { $map: [...value] } : value)
const reviver = (_key: string, value: unknown) =>
  value && typeof value === 'object' && '$map' in value && Array.isArray(value.$map) ? new Map(value.$map) : value

/**
 * What `PersistQueryClientProvider` needs: a localStorage persister and the
 * queries it keeps (`persisted`, successful ones only). A page opened without
 * a network starts from them; the sync client's outbox, the durable queue of
 * flag edits, lives in IndexedDB apart from this cache.
 */
export function persistOptions(storage: Storage | undefined): Omit<PersistQueryClientOptions, 'queryClient'> {
  return {
    persister: createSyncStoragePersister({
      storage,
      key: CACHE_KEY,
      throttleTime: 200,
      serialize: (client) => JSON.stringify(client, replacer),
      deserialize: (text) => JSON.parse(text, reviver),
    }),
    maxAge: MAX_AGE_MS,
    buster: 'flagsync-dashboard-1',
    dehydrateOptions: {
      shouldDehydrateQuery: (query) => query.state.status === 'success' && persisted(query.queryKey),
    },
  }
}
