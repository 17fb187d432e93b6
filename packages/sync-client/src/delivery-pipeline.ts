import { type Operation, retryDelay } from '@flagsync/protocol'
import { loadConflictOps } from './conflicts.js'
import { type DeliveryOutcome, deliver, toDeliveryError } from './deliver.js'
import type { BatchRow, CutOptions, NextBatch, OutboxDb, QueueView } from './outbox-db.js'
import { EMPTY_VIEW } from './outbox-db.js'
import { recordKey } from './outbox-schema.js'
import type { ResolvedOptions } from './resolve-options.js'
import type { DeliveryError, DeliveryInfo } from './types.js'

// The delivery pipeline of one client: cut a batch ahead while one is on the wire, send, record the
// acknowledgement while the next request runs, and back off after a failure. The client (sync-client.ts) owns
// scheduling, the lock, status and listeners; this module tells it what happened through `PipelineEvents`.

/** What a drain achieved. */
export interface DrainResult {
  delivered: number
  /** When the head batch is due again (it failed, or it is still backing off). */
  waitUntil: number | null
}

/** What the pipeline tells its client, in the order things happen. */
export interface PipelineEvents {
  /** An attempt is about to go on the wire (`attempting` is true from now until it answers). */
  attemptStarted(): void
  /** A batch was acknowledged and its acknowledgement recorded in IndexedDB. */
  delivered(batch: BatchRow, info: DeliveryInfo): void
  /** A rejected batch was moved to the dead letters (its error stays visible until the next success). */
  deadLettered(error: DeliveryError): void
  /** A failure was recorded in IndexedDB (attempts, backoff, last error). */
  failureRecorded(): void
  /**
   * The receiver answered with a conflict (409): the conflicting operations
   * were moved to the conflicts, the rest of the batch goes out again under a
   * new batchId.
   */
  conflicted?(count: number): void
}

/** The options the pipeline reads (every client option resolved). */
export type PipelineOptions = Pick<
  ResolvedOptions,
  | 'batchSize'
  | 'clock'
  | 'deadLetter'
  | 'fetch'
  | 'generateId'
  | 'headers'
  | 'online'
  | 'random'
  | 'requestTimeoutMs'
  | 'retry'
  | 'webhookUrl'
>

type AttemptResult = 'continue' | { failedUntil: number | null }

/** One drain's state. */
interface Drain {
  /** What the last cut left of its window, for the next cut. */
  view: QueueView
  /** The recording of acknowledged batches in IndexedDB, one after another. */
  acknowledging: Promise<void>
  /** Acknowledged batches not recorded in IndexedDB yet, in order. */
  unrecorded: BatchRow[]
  /** Those of them whose recording has not started yet. */
  toRecord: { batch: BatchRow; duplicate: boolean }[]
  delivered: number
}

type Settled<T> = { ok: true; value: T } | { ok: false; error: unknown }

/** Waits for a promise without throwing, so a failure is handled where the loop is ready for it. */
function settled<T>(promise: Promise<T>): Promise<Settled<T>> {
  return promise.then(
    (value) => ({ ok: true, value }),
    (error: unknown) => ({ ok: false, error }),
  )
}

/** How many records' delivered bases a pipeline remembers (see `deliveredBases`). */
const DELIVERED_BASES_KEPT = 1000

/** How long after the request timeout an attempt still counts as possibly on the wire. */
export const SENDING_MARGIN_MS = 1000

export class DeliveryPipeline {
  /** True while a request is on the wire. */
  attempting = false
  /** The attempt on the wire, if any (`discard` waits for it). */
  currentAttempt: Promise<unknown> | null = null
  /**
   * For records this client delivered an operation with a base to: the
   * highest such base. A queued operation whose base is not above it was
   * edited before that delivery, and the receiver would take this client's own
   * delivered edit for someone else's (see `CutOptions.staleBase`).
   */
  private readonly deliveredBases = new Map<string, number>()

  constructor(
    private readonly store: OutboxDb,
    private readonly o: PipelineOptions,
    private readonly signal: AbortSignal,
    private readonly events: PipelineEvents,
  ) {}

  /**
   * Delivers batch after batch, pipelined: while a batch is on the wire the
   * next one is cut (and persisted, marked as about to be sent) in IndexedDB,
   * and once it is acknowledged the next request starts at once while the
   * acknowledgement is recorded. Requests stay strictly one after another:
   * a batch goes out only after the one before it was acknowledged. Stops at
   * the first failure, when the head batch is backing off (unless `force`),
   * offline, on abort, or when `keepAlive` says the delivery lock is lost.
   */
  async drain(keepAlive: (ms: number) => Promise<boolean>, force: boolean): Promise<DrainResult> {
    const drain: Drain = {
      view: EMPTY_VIEW,
      acknowledging: Promise.resolve(),
      unrecorded: [],
      toRecord: [],
      delivered: 0,
    }
    try {
      let current = await this.store.nextBatch(null, this.cutOptions(drain, undefined))
      for (;;) {
        const batch = current.batch
        const stop = (waitUntil: number | null): Promise<DrainResult> =>
          this.releaseUnsent(current).then(() => ({ delivered: drain.delivered, waitUntil }))
        if (!batch) return { delivered: drain.delivered, waitUntil: null }
        if (this.signal.aborted || !this.o.online.isOnline()) return await stop(null)
        if (!force && batch.nextAttemptAt > this.o.clock.now()) return await stop(batch.nextAttemptAt)
        if (!(await keepAlive(this.o.requestTimeoutMs + SENDING_MARGIN_MS))) return await stop(null)
        // Created before the request starts, so it sees the queue as of now and runs while the request is out.
        const ahead = settled(this.store.nextBatch(batch.seq as number, this.cutOptions(drain, batch)))
        // The last acknowledgement is recorded after that cut (IndexedDB runs them in that order), and waited for
        // only after the next answer: the next request never waits for its writes.
        const recordedBefore = drain.acknowledging
        this.recordAcknowledged(drain)
        const outcome = await this.trackAttempt(this.send(batch))
        const next = await ahead
        await recordedBefore // throws if storage failed
        if (!next.ok) throw next.error
        const step = await this.afterAttempt(drain, batch, outcome, next.value)
        if (step.done) return { delivered: drain.delivered, waitUntil: step.waitUntil }
        current = step.next
        drain.view = current.view
      }
    } finally {
      this.recordAcknowledged(drain)
      await drain.acknowledging
    }
  }

  /** What the attempt of `batch` leads to: the batch to send next, or the end of this drain. */
  private async afterAttempt(
    drain: Drain,
    batch: BatchRow,
    outcome: DeliveryOutcome | 'gone',
    ahead: NextBatch,
  ): Promise<{ done: false; next: NextBatch } | { done: true; waitUntil: number | null }> {
    if (outcome !== 'gone' && outcome.kind === 'ok') {
      drain.delivered += batch.operations.length
      this.rememberBases(batch.operations)
      this.acknowledge(drain, batch, isDuplicateAck(outcome.body))
      if (ahead.batch) return { done: false, next: ahead }
      // Nothing was queued when the batch went out: look again, writes may have arrived meanwhile.
      drain.view = ahead.view
      return { done: false, next: await this.store.nextBatch(batch.seq as number, this.cutOptions(drain, undefined)) }
    }
    // The batch cut ahead never left: whatever happens to this one, it must not look sent.
    await this.releaseUnsent(ahead)
    const result = outcome === 'gone' ? 'continue' : await this.recordFailure(batch, outcome)
    if (result !== 'continue') return { done: true, waitUntil: result.failedUntil }
    // The batch was dropped (discarded, or dead-lettered and its rest put back): start again from the queue's head,
    // once the batches acknowledged before it are gone from there.
    this.recordAcknowledged(drain)
    await drain.acknowledging
    drain.view = EMPTY_VIEW
    return { done: false, next: await this.store.nextBatch(null, this.cutOptions(drain, undefined)) }
  }

  /**
   * How to cut a batch in this drain: marked as about to be sent, read from
   * where the last cut stopped, and with the records of batches cut but not
   * yet acknowledged in IndexedDB (`onWire` and those in `drain.unrecorded`)
   * taken as existing or not as those batches leave them.
   */
  private cutOptions(drain: Drain, onWire: BatchRow | undefined): CutOptions {
    const now = this.o.clock.now()
    const unrecorded = onWire ? [...drain.unrecorded, onWire] : [...drain.unrecorded]
    return {
      batchSize: this.o.batchSize,
      newBatchId: this.o.generateId,
      now,
      sendingUntil: now + this.o.requestTimeoutMs + SENDING_MARGIN_MS,
      view: drain.view,
      unrecorded,
      staleBase: (key, base) =>
        (this.deliveredBases.get(key) ?? -1) >= base ||
        unrecorded.some((b) => b.operations.some((op) => (op.baseRevision ?? -1) >= base && recordKey(op) === key)),
    }
  }

  private rememberBases(operations: readonly Operation[]): void {
    for (const op of operations) {
      if (op.baseRevision === undefined) continue
      const key = recordKey(op)
      const base = Math.max(op.baseRevision, this.deliveredBases.get(key) ?? -1)
      this.deliveredBases.delete(key) // re-inserted last: the oldest entries go first
      this.deliveredBases.set(key, base)
      if (this.deliveredBases.size > DELIVERED_BASES_KEPT) {
        this.deliveredBases.delete(this.deliveredBases.keys().next().value as string)
      }
    }
  }

  /** A delivered batch, to be recorded in IndexedDB (see `recordAcknowledged`). */
  private acknowledge(drain: Drain, batch: BatchRow, duplicate: boolean): void {
    drain.unrecorded.push(batch)
    drain.toRecord.push({ batch, duplicate })
  }

  /** Starts recording the acknowledged batches in IndexedDB, one after another, without holding up the next request. */
  private recordAcknowledged(drain: Drain): void {
    for (const { batch, duplicate } of drain.toRecord.splice(0)) this.record(drain, batch, duplicate)
  }

  private record(drain: Drain, batch: BatchRow, duplicate: boolean): void {
    drain.acknowledging = drain.acknowledging.then(async () => {
      await this.store.complete(batch)
      drain.unrecorded.splice(drain.unrecorded.indexOf(batch), 1)
      this.events.delivered(batch, { duplicate })
    })
    // A storage failure surfaces where the loop awaits it; until then it must not count as unhandled.
    drain.acknowledging.catch(() => undefined)
  }

  /** A batch this drain cut to send next and did not send: another tab may discard from it again. */
  private async releaseUnsent(next: NextBatch): Promise<void> {
    if (next.fresh && next.batch) await this.store.releaseUnsent(next.batch.batchId).catch(() => undefined)
  }

  private trackAttempt<T>(attempt: Promise<T>): Promise<T> {
    this.currentAttempt = attempt
    return attempt.finally(() => {
      this.currentAttempt = null
    })
  }

  /** One HTTP attempt of a persisted batch; 'gone' when it was discarded before it could be marked as sending. */
  private async send(batch: BatchRow): Promise<DeliveryOutcome | 'gone'> {
    const { clock } = this.o
    const now = clock.now()
    // A batch cut for this drain is marked already; mark again only if that might run out before the request does.
    if (batch.sendingUntil < now + this.o.requestTimeoutMs + SENDING_MARGIN_MS / 2) {
      const until = now + this.o.requestTimeoutMs + SENDING_MARGIN_MS
      if (!(await this.store.markSending(batch.batchId, until))) return 'gone'
      batch.sendingUntil = until
      batch.sent = true
    }
    this.attempting = true
    this.events.attemptStarted()
    try {
      return await deliver({
        url: this.o.webhookUrl,
        headers: await this.o.headers(),
        batchId: batch.batchId,
        operations: batch.operations,
        operationsJson: batch.operationsJson,
        fetch: this.o.fetch,
        clock,
        timeoutMs: this.o.requestTimeoutMs,
        signal: this.signal,
      })
    } catch (error) {
      // Only the headers function can throw here; count it like a failed request.
      return { kind: 'network', error, timedOut: false, aborted: false }
    } finally {
      this.attempting = false
    }
  }

  /** The bookkeeping of a failed attempt in IndexedDB: dead letters, or the next attempt's time (backoff). */
  private async recordFailure(
    batch: BatchRow,
    outcome: Exclude<DeliveryOutcome, { kind: 'ok' }>,
  ): Promise<AttemptResult> {
    const { clock } = this.o
    if (outcome.kind === 'network' && outcome.aborted) {
      // close(): not an answer. The batch stays as it is and goes out again, same batchId.
      await this.store.clearSending(batch.batchId).catch(() => undefined)
      return { failedUntil: null }
    }
    if (outcome.kind === 'rejected' && outcome.status === 409) {
      // Nothing of the batch was applied: its conflicts wait for the app, the rest goes out again at once.
      const reports = (await loadConflictOps()).parseConflicts(outcome.body, batch.operations)
      const stored = reports ? await this.store.storeConflicts(batch.batchId, reports, clock.now()) : 0
      if (stored > 0) {
        this.events.conflicted?.(stored)
        return 'continue'
      }
    }
    const error = toDeliveryError(outcome, batch.batchId, clock.now(), this.o.requestTimeoutMs)
    // The app discards by outbox id: name the queued operations behind the one the receiver rejected.
    const culprits = error.operationIndex === undefined ? undefined : batch.sourceIds[error.operationIndex]
    if (culprits) error.outboxIds = [...culprits]
    if (
      outcome.kind === 'rejected' &&
      this.o.deadLetter &&
      (await this.store.deadLetter(batch.batchId, error, clock.now())) > 0
    ) {
      this.events.deadLettered(error)
      return 'continue'
    }
    const retryAfterMs = outcome.kind === 'network' ? null : outcome.retryAfterMs
    const row = await this.store.recordFailure(
      batch.batchId,
      error,
      (attempt) => retryDelay(attempt, retryAfterMs, this.o.retry, this.o.random),
      clock.now(),
    )
    this.events.failureRecorded()
    return { failedUntil: row?.nextAttemptAt ?? null }
  }
}

/** The reference receiver answers a replayed batchId with `duplicate: true`: nothing was applied this time. */
function isDuplicateAck(body: unknown): boolean {
  return typeof body === 'object' && body !== null && (body as { duplicate?: unknown }).duplicate === true
}
