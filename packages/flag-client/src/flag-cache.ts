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
 * The longest set (characters of JSON) copied to `localStorage`: about 3 000
 * flags of 300 bytes, 2 MB of the origin's 5–10 MB, so the app keeps room.
 */
export const STORAGE_LIMIT = 1_000_000

/**
 * The last complete flag set, so a page opened offline has its flags at once.
 * IndexedDB holds every saved set (one row per stream URL, plain IndexedDB,
 * opened only when it is needed). `localStorage` holds a copy of the set saved
 * last, one entry per database name: read synchronously, it lets a cold start
 * answer without waiting for IndexedDB to open (30–40 ms in Chromium). The
 * copy is written before the row and removed when it cannot be written, so it
 * is never older than the row of its stream URL.
 */
export class FlagCache {
  #db: Promise<IDBDatabase> | undefined

  constructor(
    private readonly name: string,
    private readonly id: string,
    private readonly env: IndexedDbEnv | undefined,
    private readonly storage?: KeyValueStorage,
  ) {}

  #open(): Promise<IDBDatabase> {
    this.#db ??= openDatabase(this.env, this.name, (db) => db.createObjectStore('sets', { keyPath: 'id' }))
    return this.#db
  }

  /** The copy in `localStorage` when it is this stream URL's: synchronous, so the client answers during creation. */
  loadNow(): SavedSet | undefined {
    try {
      const saved = JSON.parse(this.storage?.getItem(this.name) ?? 'null') as SavedSet | null
      // A damaged or foreign entry is passed over (IndexedDB still has the set), never a reason to fail.
      if (saved?.id === this.id && saved.flags.every((f) => typeof f?.key === 'string')) return saved
    } catch {} // blocked storage (SecurityError), not JSON, no array
    return undefined
  }

  /** This stream URL's row in IndexedDB (the caller has tried `loadNow()` first). */
  async load(): Promise<SavedSet | undefined> {
    return settle((await this.#open()).transaction('sets', 'readonly').objectStore('sets').get(this.id))
  }

  async save(flags: ClientFlag[], environmentId: string | null, now: number): Promise<void> {
    const set: SavedSet = { id: this.id, flags, environmentId, savedAt: now }
    this.#copy(set)
    if (!this.env) return
    const tx = (await this.#open()).transaction('sets', 'readwrite')
    tx.objectStore('sets').put(set)
    await committed(tx)
  }

  /** Writes the copy; a set too large for it, or refused (quota), removes the entry instead. */
  #copy(set: SavedSet): void {
    const storage = this.storage
    if (!storage) return
    try {
      const text = JSON.stringify(set)
      if (text.length <= STORAGE_LIMIT) {
        storage.setItem(this.name, text)
        return
      }
    } catch {}
    try {
      storage.removeItem(this.name) // the older copy must not outlive this save
    } catch {}
  }

  close(): void {
    void this.#db?.then((db) => db.close()).catch(() => {})
  }
}
