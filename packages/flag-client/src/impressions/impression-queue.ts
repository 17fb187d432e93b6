import { committed, openDatabase, settle } from '../idb.js'
import { checkIndexedDbOptions, type IndexedDbEnv, resolveIndexedDb } from '../indexeddb-env.js'

/** One recorded impression: where it goes and its JSON, serialized once when recorded. */
export interface QueuedImpression {
  /** Queue order, assigned by `add`; absent before. */
  seq?: number
  /** The ingest URL (`…/api/environments/<id>/impressions`): rows keep the environment they were recorded in. */
  url: string
  /** One impression of the service's ingest body, as JSON text. */
  json: string
  /** A tab delivering this row owns it until then (ms); 0 when free. */
  claimedUntil: number
  /** The deliverer (one per client instance) that claimed the row last. */
  owner: string
}

/**
 * The impressions waiting for delivery. `claim` hands a batch to one
 * deliverer at a time (tabs sharing the database each take different rows),
 * `remove` deletes exactly the delivered (or rejected) rows, and `release`
 * frees rows whose attempt failed.
 */
export interface ImpressionQueue {
  /** Appends the rows in one transaction, in order; each gets the next `seq`. */
  add(rows: QueuedImpression[]): Promise<void>
  /** Up to `max` free rows, oldest first, all with the URL of the oldest free one; claimed until `until`. */
  claim(max: number, owner: string, now: number, until: number): Promise<Array<Required<QueuedImpression>>>
  /** Deletes these rows (delivered, or rejected for good); unknown seqs are ignored. */
  remove(seqs: number[]): Promise<void>
  /** Makes these rows free to claim again at once (their delivery failed). */
  release(seqs: number[]): Promise<void>
  /** Rows in the queue, claimed or not. */
  count(): Promise<number>
  /** Closes the connection; rows stay for the next queue on the same database. */
  close(): void
}

const STORE = 'rows'
const BY_URL = '[url+seq]' // Dexie's name for the compound index, kept so older databases open unchanged

/**
 * The queue in IndexedDB: survives reloads, crashes and offline periods; shared by the tabs of an origin.
 * Plain IndexedDB (no Dexie): rows keyed by an auto-incremented `seq`, an index on `[url, seq]`.
 */
export class IndexedDbImpressionQueue implements ImpressionQueue {
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

/** The earlier name (the queue was built on Dexie until 0.1); the same class. */
export const DexieImpressionQueue = IndexedDbImpressionQueue

/** The fallback where there is no IndexedDB (server-side rendering, Node without a polyfill): lost on exit. */
export class MemoryImpressionQueue implements ImpressionQueue {
  #rows: Array<Required<QueuedImpression>> = []
  #next = 1

  async add(rows: QueuedImpression[]): Promise<void> {
    for (const r of rows) this.#rows.push({ ...r, seq: this.#next++ })
  }

  async claim(max: number, owner: string, now: number, until: number): Promise<Array<Required<QueuedImpression>>> {
    const free = (r: QueuedImpression) => r.claimedUntil <= now || r.owner === owner
    const head = this.#rows.find(free)
    if (!head) return []
    const batch = this.#rows.filter((r) => r.url === head.url && free(r)).slice(0, max)
    for (const r of batch) {
      r.claimedUntil = until
      r.owner = owner
    }
    return batch.map((r) => ({ ...r }))
  }

  async remove(seqs: number[]): Promise<void> {
    const gone = new Set(seqs)
    this.#rows = this.#rows.filter((r) => !gone.has(r.seq))
  }

  async release(seqs: number[]): Promise<void> {
    const freed = new Set(seqs)
    for (const r of this.#rows) if (freed.has(r.seq)) r.claimedUntil = 0
  }

  async count(): Promise<number> {
    return this.#rows.length
  }

  close(): void {}
}
