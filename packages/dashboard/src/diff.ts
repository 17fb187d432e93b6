import type { FlagFieldDifference } from '@flagsync/protocol'
import type { Flag } from './types.js'

export interface DiffRow {
  field: string
  before: string
  after: string
}

const show = (value: unknown): string => (value === undefined ? '(not set)' : JSON.stringify(value))

/**
 * `flagDifferences(from, to)` (protocol) as rows to show: `before` the value in `from` (struck), `after` the value
 * in `to`. A promotion's preview and the compare page pass the target as `from` and the source as `to`.
 */
export const differenceRows = (differences: readonly FlagFieldDifference[]): DiffRow[] =>
  differences.map((d) => ({ field: d.field, before: show(d.from), after: show(d.to) }))

/**
 * What a change request's patch (a JSON merge patch of top-level fields)
 * would change in the flag as it is now: one row per field whose value
 * differs, `null` meaning "removed" as RFC 7396 says. Fields the patch sets to
 * what they already are are left out, so the list is what a reviewer decides on.
 */
export function patchDiff(current: Flag | undefined, patch: Readonly<Record<string, unknown>>): DiffRow[] {
  const rows: DiffRow[] = []
  for (const [field, value] of Object.entries(patch)) {
    const before = current ? (current as Record<string, unknown>)[field] : undefined
    const removes = value === null && (field === 'default_value' || field === 'disabled_value')
    const after = removes ? undefined : value
    if (JSON.stringify(before) === JSON.stringify(after)) continue
    rows.push({ field, before: show(before), after: removes ? '(removed)' : show(after) })
  }
  return rows.sort((a, b) => (a.field < b.field ? -1 : a.field > b.field ? 1 : 0))
}

/** What a 409 says of one conflicting field (the receiver's conflict report, first entry). */
export interface ApprovalConflict {
  fields: string[]
  base: Record<string, unknown> | null
  current: Record<string, unknown> | null
  reason: string
}

export interface ConflictRow {
  field: string
  /** The flag's value when the request was filed (what its requester saw). */
  base: string
  /** Its value now, which someone else set since. */
  now: string
  /** What the request sets. */
  requested: string
}

/** The conflicting approval of a change request as base / now / requested, one row per field the 409 names. */
export function conflictRows(conflict: ApprovalConflict, patch: Readonly<Record<string, unknown>>): ConflictRow[] {
  return conflict.fields.map((field) => ({
    field,
    base: conflict.base ? show(conflict.base[field]) : '(no flag)',
    now: conflict.current ? show(conflict.current[field]) : '(deleted)',
    requested: show(patch[field]),
  }))
}

/** The first conflict of a 409 body, or undefined for any other answer. */
export function approvalConflictOf(body: unknown): ApprovalConflict | undefined {
  const first = (body as { conflicts?: unknown } | null)?.conflicts
  const c = Array.isArray(first) ? (first[0] as Partial<ApprovalConflict> | undefined) : undefined
  if (!c || !Array.isArray(c.fields)) return undefined
  return { fields: c.fields, base: c.base ?? null, current: c.current ?? null, reason: String(c.reason ?? '') }
}
