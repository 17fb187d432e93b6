import { jsonEqual } from './json-equal.js'

/** One top-level field two flags disagree on; a side where the field is not set has no `from` / `to` member. */
export interface FlagFieldDifference {
  field: string
  from?: unknown
  to?: unknown
}

/** Fields that name or version a flag rather than describe it: never a difference. */
const IDENTITY = new Set(['key', 'revision'])

/**
 * The fields, sorted by name, whose values differ between a flag as it is in one place (`from`) and another (`to`);
 * undefined stands for "no such flag" (every field of the other side differs). Values are compared as JSON, so a
 * rule's `segment_key` is compared as the reference, not as the segment it names. The one flag diff: the compare
 * route, a promotion's preview and a change request's preview all read it.
 *
 * ```ts
 * flagDifferences({ key: 'a', is_enabled: true }, { key: 'a', is_enabled: false, description: 'x' })
 * // [{ field: 'description', to: 'x' }, { field: 'is_enabled', from: true, to: false }]
 * ```
 */
export function flagDifferences(
  from: Readonly<Record<string, unknown>> | undefined,
  to: Readonly<Record<string, unknown>> | undefined,
): FlagFieldDifference[] {
  const names = new Set([...Object.keys(from ?? {}), ...Object.keys(to ?? {})])
  const out: FlagFieldDifference[] = []
  for (const field of [...names].sort()) {
    if (IDENTITY.has(field)) continue
    const a = from?.[field]
    const b = to?.[field]
    if (jsonEqual(a, b)) continue
    out.push({ field, ...(a === undefined ? {} : { from: a }), ...(b === undefined ? {} : { to: b }) })
  }
  return out
}
