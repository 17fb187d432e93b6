import type { IndexedDbEnv } from './indexeddb-env.js'

/** A request's result as a promise. */
export function settle<T>(request: IDBRequest<T>): Promise<T> {
  return new Promise((resolve, reject) => {
    request.onsuccess = () => resolve(request.result)
    request.onerror = () => reject(request.error)
  })
}

/** Resolves when the transaction commits, rejects when it aborts. */
export function committed(tx: IDBTransaction): Promise<void> {
  return new Promise((resolve, reject) => {
    tx.oncomplete = () => resolve()
    tx.onerror = tx.onabort = () => reject(tx.error ?? new Error('IndexedDB transaction aborted'))
  })
}

/**
 * Opens `name` at version 10, the version Dexie's `version(1)` created, so
 * databases written by earlier releases (which used Dexie) open as they are.
 * `upgrade` creates the stores with Dexie's names and key paths. The
 * connection closes itself when another page upgrades the database.
 */
export function openDatabase(
  env: IndexedDbEnv | undefined,
  name: string,
  upgrade: (db: IDBDatabase) => void,
): Promise<IDBDatabase> {
  if (!env) return Promise.reject(new Error('IndexedDB is not available here'))
  let request: IDBOpenDBRequest
  try {
    request = env.indexedDB.open(name, 10)
  } catch (error) {
    return Promise.reject(error) // a refusal (SecurityError in some private windows) is an operation's failure, not the constructor's
  }
  request.onupgradeneeded = () => upgrade(request.result)
  return settle(request).then((db) => {
    db.onversionchange = () => db.close()
    return db
  })
}
