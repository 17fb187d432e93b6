import type { KeyValueStorage } from './types.js'

/** An IndexedDB implementation: the factory and the key range class that belong to it. */
export interface IndexedDbEnv {
  indexedDB: IDBFactory
  IDBKeyRange: typeof IDBKeyRange
}

interface IndexedDbOptions {
  indexedDB?: IDBFactory
  IDBKeyRange?: typeof IDBKeyRange
  localStorage?: KeyValueStorage | null
}

/**
 * Checks at creation that the options name one IndexedDB implementation:
 * a factory without its key range class (or the other way round) cannot
 * work, and Dexie would only say "IndexedDB API missing" later, where nobody
 * sees it. Throws a TypeError with what to pass.
 */
export function checkIndexedDbOptions(options: IndexedDbOptions): void {
  if (options.indexedDB === undefined && options.IDBKeyRange === undefined) return
  if (options.indexedDB !== undefined && options.IDBKeyRange !== undefined) return
  if (options.indexedDB !== undefined && options.indexedDB === globalIndexedDb()?.indexedDB) return
  throw new TypeError(
    'options.indexedDB and options.IDBKeyRange go together, from the same implementation ' +
      "(e.g. import { IDBFactory, IDBKeyRange } from 'fake-indexeddb'); pass both or neither",
  )
}

/**
 * The IndexedDB to use, resolved when it is needed (not at import, so a
 * polyfill installed later still counts): both halves from the options, or
 * both from the global scope (the browser's own), never one of each.
 * Undefined where there is none (Node without a polyfill, server rendering).
 */
export function resolveIndexedDb(options: IndexedDbOptions): IndexedDbEnv | undefined {
  const global = globalIndexedDb()
  if (options.indexedDB === undefined) return global
  if (options.IDBKeyRange !== undefined) return { indexedDB: options.indexedDB, IDBKeyRange: options.IDBKeyRange }
  // The page's own factory passed explicitly: its key range is the page's too.
  return options.indexedDB === global?.indexedDB ? global : undefined
}

function globalIndexedDb(): IndexedDbEnv | undefined {
  const g = globalThis as { indexedDB?: IDBFactory; IDBKeyRange?: typeof IDBKeyRange }
  return g.indexedDB && g.IDBKeyRange ? { indexedDB: g.indexedDB, IDBKeyRange: g.IDBKeyRange } : undefined
}

/**
 * The storage for the flag cache: the option's, else the page's `localStorage`
 * (read when the client is created), but only where the client uses the page's
 * own IndexedDB too. A client given an IndexedDB of its own (a test, a
 * worker's polyfill), or in a runtime without one (Node, Deno, a DOM
 * emulation in tests), keeps no copy unless it is given a storage.
 */
export function resolveLocalStorage(options: IndexedDbOptions): KeyValueStorage | undefined {
  if (options.localStorage !== undefined) return options.localStorage ?? undefined
  const page = globalIndexedDb()?.indexedDB
  if (!page || (options.indexedDB ?? page) !== page) return undefined
  try {
    return (globalThis as { localStorage?: KeyValueStorage }).localStorage
  } catch {
    return undefined // access itself throws a SecurityError where the page may not use storage
  }
}
