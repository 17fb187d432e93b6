import { useSyncExternalStore } from 'react'
import { useFlagsyncContext } from './context.js'
import { syncStoreOf } from './sync-store.js'
import type { Conflict, OutboxEntry, SyncStatus } from './sync-types.js'

const nothing = () => () => {}
const noStatus = () => null
const noEntries: readonly OutboxEntry[] = Object.freeze([])
const getNoEntries = () => noEntries
const noConflicts: readonly Conflict[] = Object.freeze([])
const getNoConflicts = () => noConflicts

/**
 * The provider's sync client status (`idle`, `syncing`, `backoff`, `offline`,
 * `blocked`, the pending count and the last error); null on the server,
 * without a `syncClient`, and until the first read from IndexedDB.
 */
export function useSyncStatus(): SyncStatus | null {
  const { sync } = useFlagsyncContext('useSyncStatus')
  const store = sync ? syncStoreOf(sync) : undefined
  return useSyncExternalStore(store?.subscribe ?? nothing, store?.getStatus ?? noStatus, noStatus)
}

/**
 * The sync client's queued operations (the batch in flight first), each with
 * its outbox id, batch id and queue time; optionally of one collection. Empty
 * on the server and without a `syncClient`.
 */
export function usePendingChanges(collection?: string): readonly OutboxEntry[] {
  const { sync } = useFlagsyncContext('usePendingChanges')
  const store = sync ? syncStoreOf(sync) : undefined
  const entries = useSyncExternalStore(store?.subscribe ?? nothing, store?.getEntries ?? getNoEntries, getNoEntries)
  return collection === undefined ? entries : ofCollection(entries, collection, (e) => e.operation.collection)
}

/**
 * The sync client's conflicts (edits the receiver refused because someone
 * else changed the same fields, or deleted the record), oldest first, until
 * resolved with `syncClient.resolve(id, …)`; optionally of one collection.
 * The same array until they change. Empty on the server and without a `syncClient`.
 */
export function useConflicts(collection?: string): readonly Conflict[] {
  const { sync } = useFlagsyncContext('useConflicts')
  const store = sync ? syncStoreOf(sync) : undefined
  const conflicts = useSyncExternalStore(
    store?.subscribe ?? nothing,
    store?.getConflicts ?? getNoConflicts,
    getNoConflicts,
  )
  return collection === undefined ? conflicts : ofCollection(conflicts, collection, (c) => c.collection)
}

const filtered = new WeakMap<readonly unknown[], Map<string, readonly unknown[]>>()

/** The same array for the same list and collection, so a filtered list is as stable as the whole. */
function ofCollection<T>(items: readonly T[], collection: string, of: (item: T) => string): readonly T[] {
  let byCollection = filtered.get(items)
  if (!byCollection) {
    byCollection = new Map()
    filtered.set(items, byCollection)
  }
  let list = byCollection.get(collection) as readonly T[] | undefined
  if (!list) {
    list = items.filter((item) => of(item) === collection)
    byCollection.set(collection, list)
  }
  return list
}
