import type { CommittedFlag, FlagWriter } from '../flag-writer.js'
import type { StoredFlag } from '../types.js'
import { type ConflictCheck, type ConflictKind, detectConflict } from './detect-conflict.js'

/** A refused write's conflict, in the shape of a sync 409's entry (the adapter adds index, collection and id). */
export interface FlagConflict {
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

/** A base revision this store never issued: the log cannot tell what the sender saw (see `detectConflict`). */
const UNISSUED = { flag: null, known: false } as const

/**
 * Nobody wrote the record after the base revision (the first rule of the three-way check), and the base is one this
 * store issued: the write may go ahead with no further read. Pure, so the write core asks it before any await.
 */
export function unchangedSinceBase(committed: CommittedFlag, baseRevision: number, storeRevision: number): boolean {
  return (
    baseRevision <= storeRevision &&
    committed.flag !== null &&
    committed.revision !== null &&
    committed.revision <= baseRevision
  )
}

/**
 * The three-way check of one flag write against the flag as committed before
 * this transaction (a batch's earlier operations are the sender's own) and as
 * the change log tells it at `base`. Null when the write may go ahead
 * (unchanged since the base, or changed only in fields it does not set); the
 * usual offline edit (nobody wrote the flag since) costs no change-log read.
 */
export async function checkFlagBase(
  writer: FlagWriter,
  scope: string,
  key: string,
  action: ConflictCheck['action'],
  sets: Record<string, unknown> | null,
  baseRevision: number,
): Promise<FlagConflict | null> {
  const committed = writer.committedIfLoaded(key, scope) ?? (await writer.committed(key, scope))
  const storeRevision = writer.storeRevision()
  if (unchangedSinceBase(committed, baseRevision, storeRevision)) return null
  const base: { flag: StoredFlag | null; known: boolean } =
    baseRevision > storeRevision ? UNISSUED : await writer.stateAt(key, baseRevision, scope)
  const verdict = detectConflict({
    action,
    sets,
    baseRevision,
    base: { record: base.flag, known: base.known },
    current: committed.flag,
    currentRevision: committed.revision,
    storeRevision,
  })
  if (verdict.outcome !== 'conflict') return null
  return {
    kind: verdict.kind,
    fields: verdict.fields,
    base: base.flag,
    current: committed.flag,
    currentRevision: committed.revision,
    reason: verdict.reason,
  }
}

/**
 * The body of a single-flag route's 409, in the sync receiver's shape (one
 * conflict, `operationIndex` 0, collection `flags`); the adapter raises it as
 * its HTTP error with `extra` fields (e.g. a change request's id).
 */
export function singleFlagConflict(
  key: string,
  conflict: FlagConflict,
  extra: Record<string, unknown> = {},
): { message: string; details: Record<string, unknown> } {
  return {
    message: `flag ${JSON.stringify(key)} conflicts: ${conflict.reason}; nothing was changed`,
    details: { ...extra, conflicts: [{ operationIndex: 0, collection: 'flags', recordId: key, ...conflict }] },
  }
}
