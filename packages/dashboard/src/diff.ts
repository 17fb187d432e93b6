import type { Flag } from './types.js'

export interface DiffRow {
  field: string
  before: string
  after: string
}

const show = (value: unknown): string => (value === undefined ? '(not set)' : JSON.stringify(value))

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
