import type { ImpressionQueue, QueuedImpression } from './impression-queue.js'
import type { IndexedDbRows } from './indexeddb-rows.js'

/**
 * The queue in IndexedDB: survives reloads, crashes and offline periods; shared by the tabs of an origin. Its code
 * (`indexeddb-rows.ts`) is loaded on first use, so neither client's bundle carries it up front; where that chunk or
 * the database cannot be opened, every operation fails (the reporter then keeps impressions in memory and says why).
 */
export class IndexedDbImpressionQueue implements ImpressionQueue {
  readonly #rows: Promise<IndexedDbRows>

  /**
   * Without `indexedDB` (and its `keyRange`), the global IndexedDB, read once the code has loaded. A factory
   * without its key range (or the other way round) fails every operation with the TypeError that says what to pass.
   */
  constructor(name: string, indexedDB?: IDBFactory, keyRange?: typeof IDBKeyRange) {
    this.#rows = import('./indexeddb-rows.js').then((m) => new m.IndexedDbRows(name, indexedDB, keyRange))
    this.#rows.catch(() => {}) // reported by the first operation, not as an unhandled rejection
  }

  add(rows: QueuedImpression[]): Promise<void> {
    return this.#rows.then((q) => q.add(rows))
  }

  claim(max: number, owner: string, now: number, until: number): Promise<Array<Required<QueuedImpression>>> {
    return this.#rows.then((q) => q.claim(max, owner, now, until))
  }

  remove(seqs: number[]): Promise<void> {
    return this.#rows.then((q) => q.remove(seqs))
  }

  release(seqs: number[]): Promise<void> {
    return this.#rows.then((q) => q.release(seqs))
  }

  count(): Promise<number> {
    return this.#rows.then((q) => q.count())
  }

  close(): void {
    void this.#rows.then((q) => q.close()).catch(() => {})
  }
}

/** The earlier name (the queue was built on Dexie until 0.1); the same class. */
export const DexieImpressionQueue = IndexedDbImpressionQueue
