import { Dexie, type Table } from 'dexie'
import type { IndexedDbEnv } from './indexeddb-env.js'
import type { ClientFlag } from './types.js'

interface SavedSet {
  /** The stream URL: one saved set per server/environment. */
  id: string
  flags: ClientFlag[]
  environmentId: string | null
  savedAt: number
}

/** The last complete flag set, so a page opened offline has its flags at once. */
export class FlagCache {
  private readonly db: Dexie & { sets: Table<SavedSet, string> }
  private readonly id: string

  /** `env`: the IndexedDB to use (see `resolveIndexedDb`). */
  constructor(name: string, id: string, env: IndexedDbEnv) {
    this.db = new Dexie(name, env) as Dexie & { sets: Table<SavedSet, string> }
    this.db.version(1).stores({ sets: 'id' })
    this.id = id
  }

  async load(): Promise<SavedSet | undefined> {
    return this.db.sets.get(this.id)
  }

  async save(flags: ClientFlag[], environmentId: string | null, now: number): Promise<void> {
    await this.db.sets.put({ id: this.id, flags, environmentId, savedAt: now })
  }

  close(): void {
    this.db.close()
  }
}
