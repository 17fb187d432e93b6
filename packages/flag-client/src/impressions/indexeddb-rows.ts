import { committed, openDatabase, settle } from '../idb.js'
import { checkIndexedDbOptions, type IndexedDbEnv, resolveIndexedDb } from '../indexeddb-env.js'
import type { ImpressionQueue, QueuedImpression } from './impression-queue.js'

const STORE = 'rows'
const BY_URL = '[url+seq]' // Dexie's name for the compound index, kept so older databases open unchanged

/**
 * The rows of `IndexedDbImpressionQueue`, loaded on first use. Plain IndexedDB (no Dexie): rows keyed by an
 * auto-incremented `seq`, an index on `[url, seq]`.
 */
export class IndexedDbRows implements ImpressionQueue {
  readonly #db: Promise<IDBDatabase>
  readonly #env: IndexedDbEnv | undefined

  /** Without `indexedDB` (and its `keyRange`), the global IndexedDB, read now. */
  constructor(name: string, indexedDB?: IDBFactory, keyRange?: typeof IDBKeyRange) {
    const options = { indexedDB, IDBKeyRange: keyRange }
    checkIndexedDbOptions(options)
    this.#env = resolveIndexedDb(options)
    this.#db = openDatabase(this.#env, name, (db) => {
      const rows = db.createObjectStore(STORE, { keyPath: 'seq', autoIncrement: true })
      rows.createIndex(BY_URL, ['url', 'seq'])
    })
    this.#db.catch(() => {}) // reported by the first operation, not as an unhandled rejection
  }

  async #transaction(mode: IDBTransactionMode): Promise<{ tx: IDBTransaction; rows: IDBObjectStore }> {
    const tx = (await this.#db).transaction(STORE, mode)
    return { tx, rows: tx.objectStore(STORE) }
  }

  async add(rows: QueuedImpression[]): Promise<void> {
    const { tx, rows: store } = await this.#transaction('readwrite')
    for (const { seq: _generated, ...row } of rows) store.add(row)
    await committed(tx)
  }

  async claim(max: number, owner: string, now: number, until: number): Promise<Array<Required<QueuedImpression>>> {
    const { tx, rows: store } = await this.#transaction('readwrite')
    const keyRange = this.#env?.IDBKeyRange as typeof IDBKeyRange
    const free = (r: QueuedImpression) => r.claimedUntil <= now || r.owner === owner
    const claimed: Array<Required<QueuedImpression>> = []
    // Callbacks, not awaits, between the requests: the transaction must stay active throughout.
    const scan = store.openCursor()
    scan.onsuccess = () => {
      const cursor = scan.result
      if (!cursor) return
      const head = cursor.value as Required<QueuedImpression>
      if (!free(head)) return cursor.continue()
      // Rows of the head's URL from the head on (earlier ones are not free, or the head would be earlier).
      const same = store.index(BY_URL).openCursor(keyRange.bound([head.url, head.seq], [head.url, []]))
      same.onsuccess = () => {
        const c = same.result
        if (!c || claimed.length >= max) return
        const row = c.value as Required<QueuedImpression>
        if (free(row)) {
          row.claimedUntil = until
          row.owner = owner
          c.update(row)
          claimed.push(row)
        }
        c.continue()
      }
    }
    await committed(tx)
    return claimed
  }

  async remove(seqs: number[]): Promise<void> {
    const { tx, rows } = await this.#transaction('readwrite')
    for (const seq of seqs) rows.delete(seq)
    await committed(tx)
  }

  async release(seqs: number[]): Promise<void> {
    const { tx, rows } = await this.#transaction('readwrite')
    for (const seq of seqs) {
      const get = rows.get(seq)
      get.onsuccess = () => {
        const row = get.result as QueuedImpression | undefined
        if (row) rows.put({ ...row, claimedUntil: 0 })
      }
    }
    await committed(tx)
  }

  async count(): Promise<number> {
    const { rows } = await this.#transaction('readonly')
    return settle(rows.count())
  }

  close(): void {
    void this.#db.then((db) => db.close()).catch(() => {})
  }
}
