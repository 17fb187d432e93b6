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
