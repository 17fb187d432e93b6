import type { Knex } from 'knex'
import { ingestBatches } from './ingest.js'
import { prepareBatch } from './plan.js'
import type { Dialect, IngestBatch } from './types.js'

export interface ImpressionWriterOptions {
  /** Rows per transaction at most (default 5000): a group takes queued batches up to this. */
  maxRows?: number
  /** Transactions in flight at once (default: 1 on SQLite, which has one writer anyway; 2 on PostgreSQL). */
  concurrency?: number
}

interface Queued {
  batch: IngestBatch
  resolve(): void
  reject(error: unknown): void
}

/**
 * Group commit for ingest. Requests queue their batch here; a writer takes
 * every batch queued since its last transaction (up to `maxRows` rows) and
 * stores them in one transaction, then answers each request. With no load a
 * batch goes at once, alone; under load the cost of a commit (every index
 * page it dirtied, written in full) and of the counter upserts is shared by
 * the group. If a group fails, its batches are retried one by one, so one
 * bad batch (its environment deleted meanwhile, say) fails alone.
 */
export class ImpressionWriter {
  private readonly queue: Queued[] = []
  private readonly maxRows: number
  private readonly concurrency: number
  private running = 0
  private idle: Promise<void> = Promise.resolve()
  private settleIdle: (() => void) | undefined

  constructor(
    private readonly knex: Knex,
    private readonly dialect: Dialect,
    options: ImpressionWriterOptions = {},
  ) {
    this.maxRows = Math.max(1, options.maxRows ?? 5000)
    this.concurrency = Math.max(1, options.concurrency ?? (dialect === 'sqlite' ? 1 : 2))
  }

  /** Resolves once the batch is committed; rejects with the database's error for this batch. */
  write(batch: IngestBatch): Promise<void> {
    prepareBatch(this.knex, this.dialect, batch)
    return new Promise((resolve, reject) => {
      this.queue.push({ batch, resolve, reject })
      if (this.running < this.concurrency) {
        if (this.running === 0) this.idle = new Promise((r) => (this.settleIdle = r))
        this.running++
        void this.drain()
      }
    })
  }

  /** Resolves when nothing is queued or being written (for shutdown). */
  whenIdle(): Promise<void> {
    return this.running === 0 ? Promise.resolve() : this.idle
  }

  private async drain(): Promise<void> {
    try {
      while (this.queue.length > 0) {
        const group: Queued[] = []
        let rows = 0
        while (this.queue.length > 0) {
          const next = this.queue[0] as Queued
          if (group.length > 0 && rows + next.batch.rows.length > this.maxRows) break
          group.push(next)
          rows += next.batch.rows.length
          this.queue.shift()
        }
        await this.commit(group)
      }
    } finally {
      this.running--
      if (this.running === 0) this.settleIdle?.()
    }
  }

  private async commit(group: Queued[]): Promise<void> {
    try {
      await ingestBatches(
        this.knex,
        this.dialect,
        group.map((q) => q.batch),
      )
      for (const q of group) q.resolve()
    } catch (error) {
      if (group.length === 1) {
        group[0]?.reject(error)
        return
      }
      for (const q of group) {
        try {
          await ingestBatches(this.knex, this.dialect, [q.batch])
          q.resolve()
        } catch (own) {
          q.reject(own)
        }
      }
    }
  }
}
