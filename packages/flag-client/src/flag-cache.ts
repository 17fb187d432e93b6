import { committed, openDatabase, settle } from './idb.js'
import type { IndexedDbEnv } from './indexeddb-env.js'
import type { ClientFlag, KeyValueStorage } from './types.js'

export interface SavedSet {
  /** The stream URL: one saved set per server/environment. */
  id: string
  flags: ClientFlag[]
  environmentId: string | null
  savedAt: number
}

/**
 * The longest set (characters of JSON) kept in `localStorage`: about 3 000
 * flags of 300 bytes, 2 MB of the origin's 5–10 MB, so the app keeps room.
 */
export const STORAGE_LIMIT = 1_000_000

/**
 * The last complete flag set, so a page opened offline has its flags at once.
 * Kept in `localStorage` when it fits: read synchronously, a cold start
 * answers without waiting for IndexedDB to open (30–40 ms in Chromium). A
 * larger set, or one the storage refuses, goes to IndexedDB: one row per
 * stream URL in plain IndexedDB, opened only when it is needed. A set lives in
 * one of the two, so a stale copy in the other can never come back.
 */
export class FlagCache {
  #db: Promise<IDBDatabase> | undefined
  /** Whether the IndexedDB row may hold an older set than the storage (true until this client deleted it). */
  #inDb = true
  readonly #key: string

  constructor(
    private readonly name: string,
    private readonly id: string,
    private readonly env: IndexedDbEnv | undefined,
    private readonly storage?: KeyValueStorage,
  ) {
    this.#key = `${name}:${id}`
  }

  #open(): Promise<IDBDatabase> {
    this.#db ??= openDatabase(this.env, this.name, (db) => db.createObjectStore('sets', { keyPath: 'id' }))
    return this.#db
  }

  /** The set in `localStorage`, if any: synchronous, so the client can answer during its creation. */
  loadNow(): SavedSet | undefined {
    try {
      const saved = JSON.parse(this.storage?.getItem(this.#key) ?? 'null') as SavedSet | null
      if (saved?.id === this.id && Array.isArray(saved.flags)) return saved
    } catch {} // blocked storage (SecurityError) or a damaged entry: IndexedDB may still have a set
    return undefined
  }

  async load(): Promise<SavedSet | undefined> {
    return (
      this.loadNow() ?? settle((await this.#open()).transaction('sets', 'readonly').objectStore('sets').get(this.id))
    )
  }

  async save(flags: ClientFlag[], environmentId: string | null, now: number): Promise<void> {
    const set: SavedSet = { id: this.id, flags, environmentId, savedAt: now }
    const kept = this.#store(set)
    if (kept && (!this.#inDb || !this.env)) return
    const tx = (await this.#open()).transaction('sets', 'readwrite')
    if (kept) tx.objectStore('sets').delete(this.id)
    else tx.objectStore('sets').put(set)
    await committed(tx)
    this.#inDb = !kept
  }

  /** Writes the set to the storage; false when it is too large or refused, with the old entry removed. */
  #store(set: SavedSet): boolean {
    const storage = this.storage
    if (!storage) return false
    try {
      const text = JSON.stringify(set)
      if (text.length <= STORAGE_LIMIT) {
        storage.setItem(this.#key, text)
        return true
      }
      storage.removeItem(this.#key)
    } catch {
      try {
        storage.removeItem(this.#key) // over quota: the older set must not outlive this save
      } catch {}
    }
    return false
  }

  close(): void {
    void this.#db?.then((db) => db.close()).catch(() => {})
  }
}
