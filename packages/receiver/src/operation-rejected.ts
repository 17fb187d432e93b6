import type { Issue } from '@flagsync/protocol'

/** Thrown by a collection when an operation is invalid; the receiver adds the operation's index. */
export class OperationRejected extends Error {
  override readonly name = 'OperationRejected'
  readonly issues: Issue[]

  constructor(message: string, issues: Issue[] = [{ path: '(root)', message }]) {
    super(message)
    this.issues = issues
  }
}
