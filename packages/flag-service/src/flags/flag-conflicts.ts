import type { SyncConflict } from '@flagsync/protocol'
import { type ConflictCheck, detectConflict } from '@flagsync/receiver'
import { HttpError } from '@flagsync/server-kit'
import type { FlagWriter } from '@flagsync/store'
import type { Request } from 'express'

/** A conflict of one operation, as the receiver's 409 lists it (the route fills index and collection). */
export type FlagConflict = Omit<SyncConflict, 'operationIndex' | 'collection' | 'recordId'>

const REVISION = /^(?:W\/)?"?(\d{1,15})"?$/

const badBase = (path: string, message: string) =>
  new HttpError('validation_failed', `invalid base revision: ${path}: ${message}`, { issues: [{ path, message }] })

/**
 * The base revision of a write (PATCH, POST replace, promote, DELETE): `If-Match: "<revision>"` (the flag's
 * `revision` as an entity tag; `*` means none) or `base_revision` in the
 * body, which is taken out of the body. Both must agree when both are sent.
 */
export function baseRevisionOf(req: Request, body: unknown): { base: number | undefined; body: unknown } {
  let fromBody: number | undefined
  let rest = body
  if (typeof body === 'object' && body !== null && !Array.isArray(body) && Object.hasOwn(body, 'base_revision')) {
    const { base_revision: raw, ...others } = body as Record<string, unknown>
    if (typeof raw !== 'number' || !Number.isSafeInteger(raw) || raw < 0) {
      throw badBase('base_revision', 'must be a non-negative integer (the revision of the flag you edited)')
    }
    fromBody = raw
    rest = others
  }
  const header = req.headers['if-match']
  let fromHeader: number | undefined
  if (header !== undefined && header.trim() !== '*') {
    const match = REVISION.exec(header.trim())
    if (!match) throw badBase('headers.if-match', 'must be the flag\'s revision as an entity tag, e.g. "42"')
    fromHeader = Number(match[1])
  }
  if (fromBody !== undefined && fromHeader !== undefined && fromBody !== fromHeader) {
    throw badBase('base_revision', `differs from If-Match (${fromHeader}); send one of them`)
  }
  return { base: fromBody ?? fromHeader, body: rest }
}

/**
 * The receiver's three-way check (`detectConflict`, the same rules as a sync
 * operation with a `baseRevision`) for one flag of an environment, against
 * the flag as committed before this transaction and as the change log tells
 * it at `base`. Resolves the conflict, or null when the write may go ahead
 * (unchanged since the base, or changed only in fields it does not set).
 */
export async function checkFlagBase(
  flags: FlagWriter,
  environmentId: string,
  key: string,
  action: ConflictCheck['action'],
  sets: Record<string, unknown> | null,
  base: number,
): Promise<FlagConflict | null> {
  const [committed, atBase, storeRevision] = await Promise.all([
    flags.committed(key, environmentId),
    flags.stateAt(key, base, environmentId),
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
