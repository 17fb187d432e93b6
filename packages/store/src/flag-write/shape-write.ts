import type { StoredFlag } from '../types.js'
import type { ConflictCheck } from './detect-conflict.js'
import type { FlagChangeKind, FlagModel, FlagWriteIntent, Invalid } from './write-types.js'

/** A write's candidate before any check that reads: its kind, the flag it would store, and what it sets. */
export type Shaped<F extends StoredFlag> =
  | {
      ok: true
      kind: FlagChangeKind
      /** The flag it would store; null for a delete; undefined for a patch of a flag that does not exist. */
      candidate: F | null | undefined
      /** What the three-way check compares: a put's whole flag, a patch's fields, null for a delete. */
      sets: Record<string, unknown> | null
      /** A patch as validated (what a change request files). */
      patch?: unknown
    }
  | { ok: false; invalid: Invalid }

/**
 * Validates an intent against the flag as the transaction sees it (`current`; undefined: absent or not read) and
 * builds its candidate: pure, so every server decides the same input the same way.
 */
export function shapeWrite<F extends StoredFlag>(
  intent: FlagWriteIntent,
  current: F | undefined,
  model: FlagModel<F>,
): Shaped<F> {
  if (intent.action === 'delete') return { ok: true, kind: 'delete', candidate: null, sets: null }
  if (intent.action === 'put') {
    const parsed = model.parse(intent.record, intent.key)
    if (!parsed.ok) return parsed
    return { ok: true, kind: current ? 'replace' : 'create', candidate: parsed.value, sets: parsed.value }
  }
  const valid = model.patch ? model.patch(intent.patch) : { ok: true as const, value: intent.patch }
  if (!valid.ok) return valid
  const patch = valid.value
  if (!current) return { ok: true, kind: 'patch', candidate: undefined, sets: patchedFields(patch, undefined), patch }
  const merged = model.merge(current, patch)
  if (!merged.ok) return merged
  return { ok: true, kind: 'patch', candidate: merged.value, sets: patchedFields(patch, merged.value), patch }
}

/**
 * The fields a merge patch sets, for the three-way check: their values in the merged flag (a null that removes a
 * field is its absence), or as sent when there is no flag to merge onto. `key` and the read-only `revision` are
 * never fields that conflict.
 */
export function patchedFields(patch: unknown, merged: StoredFlag | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  if (typeof patch !== 'object' || patch === null) return out
  const sent = patch as Record<string, unknown>
  for (const field of Object.keys(sent)) {
    if (field === 'key' || field === 'revision') continue
    out[field] = merged ? merged[field] : sent[field]
  }
  return out
}

/** The three-way check's action for an intent. */
export const conflictAction = (action: FlagWriteIntent['action']): ConflictCheck['action'] =>
  action === 'put' ? 'insert' : action === 'patch' ? 'update' : 'delete'
