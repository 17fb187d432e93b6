import { Dexie, type Table } from 'dexie'
import { checkIndexedDbOptions, resolveIndexedDb } from '../indexeddb-env.js'

/** One recorded impression: where it goes and its JSON, serialized once when recorded. */
export interface QueuedImpression {
  seq?: number
  /** The ingest URL (`…/api/environments/<id>/impressions`): rows keep the environment they were recorded in. */
  url: string
  json: string
  /** A tab delivering this row owns it until then (ms); 0 when free. */
  claimedUntil: number
  owner: string
}

/**
 * The impressions waiting for delivery. `claim` hands a batch to one
 * deliverer at a time (tabs sharing the database each take different rows),
 * `remove` deletes exactly the delivered (or rejected) rows, and `release`
 * frees rows whose attempt failed.
 */
export interface ImpressionQueue {
  add(rows: QueuedImpression[]): Promise<void>
  /** Up to `max` free rows, oldest first, all with the URL of the oldest free one; claimed until `until`. */
  claim(max: number, owner: string, now: number, until: number): Promise<Array<Required<QueuedImpression>>>
  remove(seqs: number[]): Promise<void>
  release(seqs: number[]): Promise<void>
  count(): Promise<number>
  close(): void
}

type ImpressionDexie = Dexie & { rows: Table<QueuedImpression, number> }

/** The queue in IndexedDB: survives reloads, crashes and offline periods; shared by the tabs of an origin. */
export class DexieImpressionQueue implements ImpressionQueue {
  private readonly db: ImpressionDexie

  /** Without `indexedDB` (and its `keyRange`), the global IndexedDB, read now. */
  constructor(name: string, indexedDB?: IDBFactory, keyRange?: typeof IDBKeyRange) {
    const options = { indexedDB, IDBKeyRange: keyRange }
    checkIndexedDbOptions(options)
    this.db = new Dexie(name, resolveIndexedDb(options)) as ImpressionDexie
    this.db.version(1).stores({ rows: '++seq, [url+seq]' })
  }

  async add(rows: QueuedImpression[]): Promise<void> {
    await this.db.rows.bulkAdd(rows)
  }

  claim(max: number, owner: string, now: number, until: number): Promise<Array<Required<QueuedImpression>>> {
    const { db } = this
    const free = (r: QueuedImpression) => r.claimedUntil <= now || r.owner === owner
    return db.transaction('rw', db.rows, async () => {
      const head = await db.rows.toCollection().filter(free).first()
      if (!head) return []
      const rows = (await db.rows
        .where('[url+seq]')
        .between([head.url, Dexie.minKey], [head.url, Dexie.maxKey])
        .filter(free)
        .limit(max)
        .toArray()) as Array<Required<QueuedImpression>>
      for (const r of rows) {
        r.claimedUntil = until
        r.owner = owner
      }
      await db.rows.bulkPut(rows)
      return rows
    })
  }

  async remove(seqs: number[]): Promise<void> {
    await this.db.rows.bulkDelete(seqs)
  }

  async release(seqs: number[]): Promise<void> {
    const { db } = this
    await db.transaction('rw', db.rows, async () => {
      await db.rows.where('seq').anyOf(seqs).modify({ claimedUntil: 0 })
    })
  }

  count(): Promise<number> {
    return this.db.rows.count()
  }

  close(): void {
    this.db.close()
  }
}

/** The fallback where there is no IndexedDB (server-side rendering, Node without a polyfill): lost on exit. */
export class MemoryImpressionQueue implements ImpressionQueue {
  private rows: Array<Required<QueuedImpression>> = []
  private next = 1

  async add(rows: QueuedImpression[]): Promise<void> {
    for (const r of rows) this.rows.push({ ...r, seq: this.next++ })
  }

  async claim(max: number, owner: string, now: number, until: number): Promise<Array<Required<QueuedImpression>>> {
    const free = (r: QueuedImpression) => r.claimedUntil <= now || r.owner === owner
    const head = this.rows.find(free)
    if (!head) return []
    const batch = this.rows.filter((r) => r.url === head.url && free(r)).slice(0, max)
    for (const r of batch) {
      r.claimedUntil = until
      r.owner = owner
    }
    return batch.map((r) => ({ ...r }))
  }

  async remove(seqs: number[]): Promise<void> {
    const gone = new Set(seqs)
    this.rows = this.rows.filter((r) => !gone.has(r.seq))
  }

  async release(seqs: number[]): Promise<void> {
    const freed = new Set(seqs)
    for (const r of this.rows) if (freed.has(r.seq)) r.claimedUntil = 0
  }

  async count(): Promise<number> {
    return this.rows.length
  }

  close(): void {}
}
