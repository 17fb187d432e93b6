import type { OutboxEntry, SyncStatus } from '@flagsync/sync-client'
import { useSyncExternalStore } from 'react'
import { useFlagsyncContext } from './context.js'
import { syncStoreOf } from './sync-store.js'

const nothing = () => () => {}
const noStatus = () => null
const noEntries: readonly OutboxEntry[] = Object.freeze([])
const getNoEntries = () => noEntries

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
  return collection === undefined ? entries : ofCollection(entries, collection)
}

const filtered = new WeakMap<readonly OutboxEntry[], Map<string, readonly OutboxEntry[]>>()

/** The same array for the same entries and collection, so a filtered list is as stable as the whole. */
function ofCollection(entries: readonly OutboxEntry[], collection: string): readonly OutboxEntry[] {
  let byCollection = filtered.get(entries)
  if (!byCollection) {
    byCollection = new Map()
    filtered.set(entries, byCollection)
  }
  let list = byCollection.get(collection)
  if (!list) {
    list = entries.filter((entry) => entry.operation.collection === collection)
    byCollection.set(collection, list)
  }
  return list
}
