import { type Operation, retryDelay, type SyncAck } from '@flagsync/protocol'
import { type DeliveryOutcome, deliver, toDeliveryError } from './deliver.js'
import { loadLazyOps } from './lazy.js'
import type { BatchRow, CutOptions, NextBatch, OutboxDb } from './outbox-db.js'
import { EMPTY_VIEW } from './outbox-db.js'
import { recordKey } from './outbox-schema.js'
import type { PipelineEvents } from './pipeline-events.js'
import type { ResolvedOptions } from './resolve-options.js'

// The delivery pipeline of one client: cut a batch ahead while one is on the wire, send, record the
// acknowledgement while the next request runs, and back off after a failure. The client (sync-client.ts) owns
// scheduling, the lock, status and listeners; this module tells it what happened through `PipelineEvents`.

/** What a drain achieved. */
export interface DrainResult {
  delivered: number
  /** When the head batch is due again (it failed, or it is still backing off). */
  waitUntil: number | null
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
const SENDING_MARGIN_MS = 1000

/** See `createDeliveryPipeline`. */
export interface DeliveryPipeline {
  /** True while a request is on the wire. */
  attempting: boolean
  /** The attempt on the wire, if any (`discard` waits for it). */
  currentAttempt: Promise<unknown> | null
  /**
   * Delivers batch after batch, pipelined: while a batch is on the wire the
   * next one is cut (and persisted, marked as about to be sent) in IndexedDB,
   * and once it is acknowledged the next request starts at once while the
   * acknowledgement is recorded. Requests stay strictly one after another:
   * a batch goes out only after the one before it was acknowledged. Stops at
   * the first failure, when the head batch is backing off (unless `force`),
   * offline, on abort, or when `keepAlive` says the delivery lock is lost.
   */
  drain(keepAlive: (ms: number) => Promise<boolean>, force: boolean): Promise<DrainResult>
}

/** The delivery pipeline of one client (a closure, so its internals minify to short names). */
export function createDeliveryPipeline(
  store: OutboxDb,
  o: PipelineOptions,
  signal: AbortSignal,
  events: PipelineEvents,
): DeliveryPipeline {
  const pipeline: DeliveryPipeline = { attempting: false, currentAttempt: null, drain }
  const [cutOptions, rememberBases] = deliveredBases(o)
  const [send, releaseUnsent] = attempts(store, o, signal, events, pipeline)
  return pipeline

  async function drain(keepAlive: (ms: number) => Promise<boolean>, force: boolean): Promise<DrainResult> {
    /** What the last cut left of its window, for the next cut. */
    let view = EMPTY_VIEW
    /** The recording of acknowledged batches in IndexedDB, one after another. */
    let acknowledging: Promise<void> = Promise.resolve()
    /** Acknowledged batches not recorded in IndexedDB yet, in order. */
    const unrecorded: BatchRow[] = []
    /** Those of them whose recording has not started yet. */
    const toRecord: { batch: BatchRow; duplicate: boolean }[] = []
    let delivered = 0
    const done = (waitUntil: number | null): DrainResult => ({ delivered, waitUntil })

    /** Starts recording the acknowledged batches in IndexedDB, one after another, without holding up the next request. */
    const recordAcknowledged = (): void => {
      for (const { batch, duplicate } of toRecord.splice(0)) {
        acknowledging = acknowledging.then(async () => {
          await store.complete(batch)
          unrecorded.splice(unrecorded.indexOf(batch), 1)
          events.delivered(batch, { duplicate })
        })
        // A storage failure surfaces where the loop awaits it; until then it must not count as unhandled.
        acknowledging.catch(() => undefined)
      }
    }

    try {
      let current = await store.nextBatch(null, cutOptions(view, unrecorded))
      for (;;) {
        const batch = current.batch
        if (!batch) return done(null)
        // The drain ends offline, on close, when the delivery lock is lost, or while the batch backs off (unless
        // forced): then it is due again at `stopAt`.
        const off = signal.aborted || !o.online.isOnline()
        const stopAt = !off && !force && batch.nextAttemptAt > o.clock.now() ? batch.nextAttemptAt : null
        if (off || stopAt !== null || !(await keepAlive(o.requestTimeoutMs + SENDING_MARGIN_MS))) {
          await releaseUnsent(current)
          return done(stopAt)
        }
        // Created before the request starts, so it sees the queue as of now and runs while the request is out.
        const ahead = settled(store.nextBatch(batch.seq as number, cutOptions(view, unrecorded, batch)))
        // The last acknowledgement is recorded after that cut (IndexedDB runs them in that order), and waited for
        // only after the next answer: the next request never waits for its writes.
        const recordedBefore = acknowledging
        recordAcknowledged()
        const attempt = send(batch)
        pipeline.currentAttempt = attempt
        const outcome = await attempt.finally(() => {
          pipeline.currentAttempt = null
        })
        const settledAhead = await ahead
        await recordedBefore // throws if storage failed
        if (!settledAhead.ok) throw settledAhead.error
        const next = settledAhead.value
        if (outcome !== 'gone' && outcome.kind === 'ok') {
          delivered += batch.operations.length
          // Any body the receiver answers: text, a number or none has no such properties, which reads as absent.
          const ack = outcome.body as Partial<SyncAck> | null | undefined
          rememberBases(batch.operations, Number.isSafeInteger(ack?.revision) ? ack?.revision : undefined)
          // A delivered batch, to be recorded in IndexedDB (see `recordAcknowledged`); a replay's answer says so.
          unrecorded.push(batch)
          toRecord.push({ batch, duplicate: ack?.duplicate === true })
          if (next.batch) current = next
          else {
            // Nothing was queued when the batch went out: look again, writes may have arrived meanwhile.
            view = next.view
            current = await store.nextBatch(batch.seq as number, cutOptions(view, unrecorded))
          }
        } else {
          // The batch cut ahead never left: whatever happens to this one, it must not look sent.
          await releaseUnsent(next)
          const result = outcome === 'gone' ? 'continue' : await recordFailure(store, o, events, batch, outcome)
          if (result !== 'continue') return done(result.failedUntil)
          // The batch was dropped (discarded, or dead-lettered and its rest put back): start again from the queue's
          // head, once the batches acknowledged before it are gone from there.
          recordAcknowledged()
          await acknowledging
          view = EMPTY_VIEW
          current = await store.nextBatch(null, cutOptions(view, unrecorded))
        }
        view = current.view
      }
    } finally {
      recordAcknowledged()
      await acknowledging
    }
  }
}

/** How to cut a batch in a drain (`cutOptions`), and how to remember a delivered batch's bases (`rememberBases`). */
type BaseMemory = [
  cutOptions: (view: CutOptions['view'], unrecorded: readonly BatchRow[], onWire?: BatchRow) => CutOptions,
  rememberBases: (operations: readonly Operation[], acknowledged: number | undefined) => void,
]

/**
 * For records this client delivered an operation with a base to: the highest such base, and the revision the receiver
 * acknowledged that delivery with. A queued operation whose base is not above it was edited before that delivery, and
 * the receiver would take this client's own delivered edit for someone else's: it is checked from the acknowledged
 * revision instead (see `CutOptions.rebase`). A pair rather than an object: property names survive minifying.
 */
function deliveredBases(o: PipelineOptions): BaseMemory {
  /** Record → [the highest base delivered, the revision its delivery was acknowledged with (unknown: undefined)]. */
  const bases = new Map<string, [base: number, acknowledged: number | undefined]>()
  return [
    // A cut is marked as about to be sent, read from where the last cut stopped (`view`), and takes the records of
    // batches cut but not yet acknowledged in IndexedDB (`onWire` and those in `unrecorded`) as those batches leave them.
    (view, unrecorded, onWire) => {
      const now = o.clock.now()
      return {
        batchSize: o.batchSize,
        newBatchId: o.generateId,
        now,
        sendingUntil: now + o.requestTimeoutMs + SENDING_MARGIN_MS,
        view,
        unrecorded: unrecorded.concat(onWire ?? []),
        // The batches in `unrecorded` are acknowledged, their bases remembered; an edit of the record still on the
        // wire has no revision to move to yet, so the base is dropped (an undefined base compares false).
        rebase: (key, base, delivered = bases.get(key)) =>
          onWire?.operations.some((op) => (op.baseRevision as number) >= base && recordKey(op) === key)
            ? undefined
            : delivered && delivered[0] >= base
              ? delivered[1]
              : base,
      }
    },
    (operations, acknowledged) => {
      for (const op of operations) {
        if (op.baseRevision === undefined) continue
        const key = recordKey(op)
        const base = Math.max(op.baseRevision, bases.get(key)?.[0] ?? -1)
        bases.delete(key) // re-inserted last: the oldest entries go first
        bases.set(key, [base, acknowledged])
        if (bases.size > DELIVERED_BASES_KEPT) bases.delete(bases.keys().next().value as string)
      }
    },
  ]
}

/**
 * One HTTP attempt of a persisted batch (`send`: 'gone' when it was discarded before it could be marked as sending),
 * and the release of a batch a drain cut to send next and did not send (`releaseUnsent`: another tab may discard
 * from it again). A pair, like `deliveredBases`.
 */
function attempts(
  store: OutboxDb,
  o: PipelineOptions,
  signal: AbortSignal,
  events: PipelineEvents,
  pipeline: DeliveryPipeline,
): [send: (batch: BatchRow) => Promise<DeliveryOutcome | 'gone'>, releaseUnsent: (next: NextBatch) => Promise<void>] {
  return [
    async (batch) => {
      const until = o.clock.now() + o.requestTimeoutMs + SENDING_MARGIN_MS
      // A batch cut for this drain is marked already; mark again only if that might run out before the request does.
      if (batch.sendingUntil < until - SENDING_MARGIN_MS / 2) {
        if (!(await store.setBatch(batch.batchId, { sendingUntil: until, sent: true }))) return 'gone'
        batch.sendingUntil = until
        batch.sent = true
      }
      pipeline.attempting = true
      events.attemptStarted()
      try {
        return await deliver(o, batch, await o.headers(), signal)
      } catch (error) {
        // Only the headers function can throw here; count it like a failed request.
        return { kind: 'network', error, timedOut: false, aborted: false }
      } finally {
        pipeline.attempting = false
      }
    },
    async (next) => {
      if (next.fresh && next.batch)
        await store.setBatch(next.batch.batchId, { sendingUntil: 0, sent: false }).catch(() => undefined)
    },
  ]
}

/** The bookkeeping of a failed attempt in IndexedDB: dead letters, or the next attempt's time (backoff). */
async function recordFailure(
  store: OutboxDb,
  o: PipelineOptions,
  events: PipelineEvents,
  batch: BatchRow,
  outcome: Exclude<DeliveryOutcome, { kind: 'ok' }>,
): Promise<AttemptResult> {
  const { clock } = o
  const { batchId } = batch
  if (outcome.kind === 'network' && outcome.aborted) {
    // close(): not an answer. The batch stays as it is and goes out again, same batchId.
    await store.setBatch(batchId, { sendingUntil: 0 }).catch(() => undefined)
    return { failedUntil: null }
  }
  const error = toDeliveryError(outcome, batchId, clock.now(), o.requestTimeoutMs)
  // The app discards by outbox id: name the queued operations behind the one the receiver rejected.
  const culprits = error.operationIndex === undefined ? undefined : batch.sourceIds[error.operationIndex]
  if (culprits) error.outboxIds = [...culprits]
  // A 409's conflicts, a 413's re-cut, or dead letters: in the lazy chunk, as a receiver rejects a batch only when
  // something is wrong. `(status | 4) === 413` holds for 409 and 413 only (they differ in that one bit): bytes.
  if (
    outcome.kind === 'rejected' &&
    ((outcome.status | 4) === 413 || o.deadLetter) &&
    (await (await loadLazyOps()).setRejectedAside(store.db, batch, outcome, error, o, clock.now(), events))
  ) {
    return 'continue'
  }
  const retryAfterMs = outcome.kind === 'network' ? null : outcome.retryAfterMs
  const row = await store.recordFailure(
    batchId,
    error,
    (attempt) => retryDelay(attempt, retryAfterMs, o.retry, o.random),
    clock.now(),
  )
  events.failureRecorded()
  return { failedUntil: row?.nextAttemptAt ?? null }
}
