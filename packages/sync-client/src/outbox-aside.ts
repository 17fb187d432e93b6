import type { conflictOps } from './conflict-ops.js'
import type { DeliveryOutcome } from './deliver.js'
import type { repairOps } from './outbox-repair.js'
import type { BatchRow, OutboxDexie } from './outbox-schema.js'
import type { PipelineEvents } from './pipeline-events.js'
import type { DeadLetter, DeliveryError } from './types.js'

// What a rejected batch leaves aside: a 409's conflicts, dead letters (opt-in), and the dead letters' listing (the
// conflicts' listing is eager: the flag client and the React bindings read it on every status). Part of the lazy chunk (see lazy-ops.ts): a receiver rejects a batch only when something is wrong with it.

type AsideKit = ReturnType<typeof repairOps> & ReturnType<typeof conflictOps>

/**
 * Rejections that say nothing about the operations (credentials, the URL, the method, the batch's size or
 * encoding): dead-lettering the batch would file every queued edit away for a fault fixed elsewhere, so it blocks.
 */
const NOT_THE_OPERATIONS = new Set([401, 403, 404, 405, 413, 415])

/** The operations on what was set aside, bound to the repair and conflict operations. */
export function asideOps({ deadLetter, recut, parseConflicts, storeConflicts }: AsideKit) {
  return { setRejectedAside, deadLetters, clearDeadLetters }

  /**
   * After a rejection (4xx): a 409's conflicts go to the conflicts table, else, with `deadLetter`, the rejected
   * operations to the dead letters; in both cases the rest of the batch goes out again under a new batchId (see
   * `setAside`). Resolves true when that happened (the drain continues), false when the batch stays, blocked.
   */
  async function setRejectedAside(
    db: OutboxDexie,
    batch: BatchRow,
    outcome: Extract<DeliveryOutcome, { kind: 'rejected' }>,
    error: DeliveryError,
    o: { deadLetter: boolean; batchSize: number },
    now: number,
    events: PipelineEvents,
  ): Promise<boolean> {
    // Too large for the receiver, and the client now cuts smaller batches (a new `batchSize`): the same operations go
    // out again under new batchIds, nothing filed away. At the same size it would only be refused again: blocked.
    if (outcome.status === 413) {
      return o.batchSize < batch.operations.length && (await recut(db, batch.batchId, now))
    }
    // Nothing of the batch was applied: its conflicts wait for the app, the rest goes out again at once.
    const reports = outcome.status === 409 ? parseConflicts(outcome.body, batch.operations) : null
    const stored = reports ? await storeConflicts(db, batch.batchId, reports, now) : 0
    if (stored > 0) {
      events.conflicted?.(stored)
      return true
    }
    if (
      o.deadLetter &&
      !NOT_THE_OPERATIONS.has(outcome.status) &&
      (await deadLetter(db, batch.batchId, error, now)) > 0
    ) {
      events.deadLettered(error)
      return true
    }
    return false
  }

  async function deadLetters(db: OutboxDexie): Promise<DeadLetter[]> {
    return (await db.deadLetters.toArray()).map(({ sources: _kept, ...row }) => row as DeadLetter)
  }

  async function clearDeadLetters(db: OutboxDexie, ids?: readonly number[]): Promise<void> {
    if (ids === undefined) await db.deadLetters.clear()
    else await db.deadLetters.bulkDelete([...ids])
  }
}
