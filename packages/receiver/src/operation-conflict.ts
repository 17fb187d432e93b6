import type { FlagConflict } from '@flagsync/store'

/**
 * One entry of a 409's `conflicts`: the receiver adds the operation's index, collection and record id. The same
 * shape as the store's write core reports a flag's conflict (`FlagConflict`).
 */
export type ConflictReport = FlagConflict

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
