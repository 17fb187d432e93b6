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

const tagged = (value: unknown): value is { $map: Array<[unknown, unknown]> } =>
  typeof value === 'object' && value !== null && '$map' in value && Array.isArray(value.$map)

/** A tagged map back as a Map, and the maps it holds (environment → key → flag); the flags are not walked. */
const mapOf = (value: unknown): unknown => (tagged(value) ? new Map(value.$map.map(([k, v]) => [k, mapOf(v)])) : value)

/**
 * A query's data with its maps back: at its root (the stream's flags) or one of its fields (an editable copy's
 * `flags`). Only where maps are kept is looked at: a JSON.parse reviver would be called for every field of the
 * thousands of flags a large project keeps, on the first render's path.
 */
function reviveData(data: unknown): unknown {
  if (tagged(data)) return mapOf(data)
  if (typeof data !== 'object' || data === null || Array.isArray(data)) return data
  const fields = data as Record<string, unknown>
  for (const [field, value] of Object.entries(fields)) if (tagged(value)) fields[field] = mapOf(value)
  return data
}

function deserialize(text: string) {
  const client = JSON.parse(text) as { clientState?: { queries?: Array<{ state: { data?: unknown } }> } }
  for (const query of client.clientState?.queries ?? []) query.state.data = reviveData(query.state.data)
  return client
}

/**
 * A query worth saving: it succeeded, or its last refetch got no answer (the service is down or the network is gone)
 * and it still holds what the service answered before — dropping that would leave the next offline start empty. A
 * read the service refused (401 after a sign-out, 403, 404) is not saved.
 */
function keepsLastAnswer(state: { status: string; data: unknown; error: unknown }): boolean {
  if (state.status === 'success') return true
  return state.status === 'error' && state.data !== undefined && state.error instanceof ApiError && state.error.offline
}

/**
 * What `PersistQueryClientProvider` needs: a localStorage persister and the
 * queries it keeps (`persisted`, see `keepsLastAnswer`). A page opened without
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
      deserialize: (text) => deserialize(text) as ReturnType<typeof JSON.parse>,
    }),
    maxAge: MAX_AGE_MS,
    buster: 'flagsync-dashboard-1',
    dehydrateOptions: {
      shouldDehydrateQuery: (query) => keepsLastAnswer(query.state) && persisted(query.queryKey),
    },
  }
}
