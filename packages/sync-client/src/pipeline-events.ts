import type { BatchRow } from './outbox-schema.js'
import type { DeliveryError, DeliveryInfo } from './types.js'

// Its own module so the lazy chunk (outbox-aside.ts) can name it without importing the pipeline, which loads that
// chunk.

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
