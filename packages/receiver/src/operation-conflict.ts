import type { ConflictKind } from '@flagsync/store'

/** One entry of a 409's `conflicts`: the receiver adds the operation's index, collection and record id. */
export interface ConflictReport {
  kind: ConflictKind
  /** The fields in conflict (for `deleted`, the fields the update sets; for a delete, none). */
  fields: string[]
  /** The record at the base revision; null where absent or no longer known. */
  base: Record<string, unknown> | null
  /** The record now; null where absent. */
  current: Record<string, unknown> | null
  /** Revision of the record's last change; null where unknown or absent. */
  currentRevision: number | null
  /** Why, in words (says so when the check was record-level). */
  reason: string
}

/**
 * Thrown by a collection when an operation with a `baseRevision` conflicts
 * with what others changed since. The batch is not applied; the sender gets a
 * 409 listing every conflicting operation of the batch.
 */
export class OperationConflict extends Error {
  override readonly name = 'OperationConflict'
  readonly report: ConflictReport

  constructor(report: ConflictReport) {
    super(report.reason)
    this.report = report
  }
}
