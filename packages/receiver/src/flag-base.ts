import type { SyncConflict } from '@flagsync/protocol'
import { HttpError } from '@flagsync/server-kit'
import type { FlagWriter } from '@flagsync/store'
import { type ConflictCheck, detectConflict } from '@flagsync/store'

/** A conflict of one operation, as the receiver's 409 lists it (the route fills index and collection). */
export type FlagConflict = Omit<SyncConflict, 'operationIndex' | 'collection' | 'recordId'>

/**
 * The receiver's three-way check (`detectConflict`, the same rules as a sync
 * operation with a `baseRevision`) for one flag of a scope (an environment, or
 * '' for the flat API), against the flag as committed before this transaction
 * and as the change log tells it at `base`. Resolves the conflict, or null when
 * the write may go ahead (unchanged since the base, or changed only in fields
 * it does not set).
 */
export async function checkFlagBase(
  flags: FlagWriter,
  scope: string,
  key: string,
  action: ConflictCheck['action'],
  sets: Record<string, unknown> | null,
  base: number,
): Promise<FlagConflict | null> {
  const [committed, atBase, storeRevision] = await Promise.all([
    flags.committed(key, scope),
    flags.stateAt(key, base, scope),
    flags.storeRevision(),
  ])
  const verdict = detectConflict({
    action,
    sets,
    baseRevision: base,
    base: { record: atBase.flag, known: atBase.known },
    current: committed.flag,
    currentRevision: committed.revision,
    storeRevision,
  })
  if (verdict.outcome !== 'conflict') return null
  return {
    kind: verdict.kind,
    fields: verdict.fields,
    // A base this store never issued has no state to show (see `detectConflict`).
    base: base > storeRevision ? null : atBase.flag,
    current: committed.flag,
    currentRevision: committed.revision,
    reason: verdict.reason,
  }
}

/** The 409 of a single-flag route, in the receiver's body shape (`operationIndex` 0, collection `flags`). */
export function flagConflictError(key: string, conflict: FlagConflict, extra: Record<string, unknown> = {}): HttpError {
  return new HttpError('conflict', `flag ${JSON.stringify(key)} conflicts: ${conflict.reason}; nothing was changed`, {
    ...extra,
    conflicts: [{ operationIndex: 0, collection: 'flags', recordId: key, ...conflict }],
  })
}
