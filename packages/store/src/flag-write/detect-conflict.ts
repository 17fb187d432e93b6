/**
 * The three-way check of an operation that carries a `baseRevision`: pure,
 * no I/O. The caller reads the record as committed now and as it was at the
 * base revision (from the change log), and applies the operation unless the
 * answer is a conflict.
 */

import { jsonEqual } from '@flagsync/protocol'

type Data = Record<string, unknown>

export type ConflictKind = 'field' | 'deleted' | 'exists'

export interface ConflictCheck {
  action: 'insert' | 'update' | 'delete'
  /** What the operation sets: an update's `changes`, an insert's full record (defaults filled in); null for a delete. */
  sets: Data | null
  baseRevision: number
  /** The record at the base revision (null: absent); `known` false when the log no longer tells. */
  base: { record: Data | null; known: boolean }
  /** The record as committed now (null: absent). */
  current: Data | null
  /** Revision of the current record's last change; null when absent. */
  currentRevision: number | null
  /**
   * The store's newest revision before this write. A base above it was never issued here (the sender saw a
   * database since restored or reset): nothing tells what it saw, so the check is record-level, as when pruned.
   */
  storeRevision: number
}

export type ConflictVerdict =
  | { outcome: 'apply' }
  /** Changed since the base, but not in the operation's fields: its fields go on top of the current record. */
  | { outcome: 'merge' }
  | { outcome: 'conflict'; kind: ConflictKind; fields: string[]; reason: string }

const APPLY: ConflictVerdict = { outcome: 'apply' }

/** The three-way check, in order: absent now, unchanged since the base, record-level, created since, field by field. */
export function detectConflict(check: ConflictCheck): ConflictVerdict {
  const { baseRevision, current, currentRevision, storeRevision } = check
  const unissued = baseRevision > storeRevision
  const base = unissued ? { record: null, known: false } : check.base
  const pruned = unissued
    ? `; revision ${baseRevision} was never issued here (the newest is ${storeRevision}), so the check was record-level`
    : base.known
      ? ''
      : `; the change log no longer holds revision ${baseRevision}, so the check was record-level`
  if (current === null) return absentNow(check, base, pruned)
  // Unchanged since the base: nobody else wrote it.
  if (!unissued && currentRevision !== null && currentRevision <= baseRevision) return APPLY
  if (!base.known) return recordLevel(check, current, pruned)
  if (base.record === null) return createdSince(check, current)
  return fieldByField(check, base.record, current)
}

type Base = ConflictCheck['base']

/**
 * Absent now. An update or delete is a conflict only if the record existed at the base (or the log cannot say that
 * it did not); an insert only if the log says it existed at the base: the sender replaced what someone has deleted
 * since, and recreating it would undo that delete unseen ('recreate' resolves it, sent without a base).
 */
function absentNow({ action, sets, baseRevision }: ConflictCheck, base: Base, pruned: string): ConflictVerdict {
  if (action === 'insert' ? !(base.known && base.record !== null) : base.known && base.record === null) return APPLY
  return {
    outcome: 'conflict',
    kind: 'deleted',
    fields: action === 'update' ? Object.keys(sets ?? {}) : [],
    reason: `the record was deleted after revision ${baseRevision}${pruned}`,
  }
}

/** Record-level: it changed since the base, and the base values are gone. */
function recordLevel({ action, sets, baseRevision }: ConflictCheck, current: Data, pruned: string): ConflictVerdict {
  if (action === 'insert') {
    const fields = differing(sets ?? {}, current)
    if (fields.length === 0) return APPLY
    return {
      outcome: 'conflict',
      kind: 'exists',
      fields,
      reason: `the record was written after revision ${baseRevision}${pruned}`,
    }
  }
  const fields = action === 'update' ? differing(sets ?? {}, current) : Object.keys(current)
  if (action === 'update' && fields.length === 0) return APPLY
  return {
    outcome: 'conflict',
    kind: 'field',
    fields,
    reason: `the record changed after revision ${baseRevision}${pruned}`,
  }
}

/**
 * Created by someone else since the base. An insert that sets every field exactly as they did loses nothing; an
 * update of it (the sender saw it absent) is left to the usual rules.
 */
function createdSince({ action, sets, baseRevision }: ConflictCheck, current: Data): ConflictVerdict {
  if (action !== 'insert') return APPLY
  const fields = differing(sets ?? {}, current)
  if (fields.length === 0) return APPLY
  return {
    outcome: 'conflict',
    kind: 'exists',
    fields,
    reason: `the record was created after revision ${baseRevision}`,
  }
}

/** Both sides known: a field both changed, to different values, would silently overwrite the others' value. */
function fieldByField({ action, sets, baseRevision }: ConflictCheck, base: Data, current: Data): ConflictVerdict {
  const changedSinceBase = differing(current, base, base)
  if (action === 'delete') {
    // Deleting drops what the others changed: a conflict on those fields, if any.
    if (changedSinceBase.length === 0) return APPLY
    return {
      outcome: 'conflict',
      kind: 'field',
      fields: changedSinceBase,
      reason: `the record changed after revision ${baseRevision} and deleting it would drop those changes`,
    }
  }
  const mine = sets ?? {}
  const clashing = changedSinceBase.filter((name) => Object.hasOwn(mine, name) && !jsonEqual(mine[name], current[name]))
  if (clashing.length > 0) {
    return {
      outcome: 'conflict',
      kind: 'field',
      fields: clashing,
      reason: `${clashing.join(', ')} also changed after revision ${baseRevision}`,
    }
  }
  return changedSinceBase.length > 0 ? { outcome: 'merge' } : APPLY
}

/** Fields of `a` (and of `also`, when given) whose values differ from `b`'s, in a stable order. */
function differing(a: Data, b: Data, also?: Data): string[] {
  const names = new Set(Object.keys(a))
  if (also) for (const name of Object.keys(also)) names.add(name)
  return [...names].filter((name) => !jsonEqual(a[name], b[name]))
}
