import { committed, openDatabase, settle } from './idb.js'
import type { IndexedDbEnv } from './indexeddb-env.js'
import type { ClientFlag } from './types.js'

interface SavedSet {
  /** The stream URL: one saved set per server/environment. */
  id: string
  flags: ClientFlag[]
  environmentId: string | null
  savedAt: number
}

/**
 * The last complete flag set, so a page opened offline has its flags at once.
 * One row per stream URL in plain IndexedDB: a get and a put need no library
 * (Dexie was ~30 kB gz of the flag client for this and the impression queue).
 */
export class FlagCache {
  private readonly db: Promise<IDBDatabase>
  private readonly id: string

  /** `env`: the IndexedDB to use (see `resolveIndexedDb`). */
  constructor(name: string, id: string, env: IndexedDbEnv) {
    this.db = openDatabase(env, name, (db) => db.createObjectStore('sets', { keyPath: 'id' }))
    this.db.catch(() => {}) // reported by load/save, not as an unhandled rejection
    this.id = id
  }

  async load(): Promise<SavedSet | undefined> {
    const db = await this.db
    return settle(db.transaction('sets', 'readonly').objectStore('sets').get(this.id))
  }

  async save(flags: ClientFlag[], environmentId: string | null, now: number): Promise<void> {
    const tx = (await this.db).transaction('sets', 'readwrite')
    tx.objectStore('sets').put({ id: this.id, flags, environmentId, savedAt: now } satisfies SavedSet)
    await committed(tx)
  }

  close(): void {
    void this.db.then((db) => db.close()).catch(() => {})
  }
}
