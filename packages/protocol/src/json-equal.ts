/**
 * Structural equality of JSON data (as `JSON.parse` gives it, or as a schema
 * validated it), key order aside, either way round. An undefined object member
 * counts as absent, as `JSON.stringify` leaves it out: `jsonEqual({ a: 1,
 * b: undefined }, { a: 1 })` holds; `jsonEqual({ a: null }, {})` and
 * `jsonEqual(undefined, null)` do not. The one comparison of flag values,
 * flags and records: the evaluator's prerequisite check, the store's "a put
 * that changes nothing", the receiver's conflict check. It ships in every
 * browser bundle that evaluates, so it stays this small.
 */
export function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true
  if (typeof a !== 'object' || typeof b !== 'object' || !a || !b || Array.isArray(a) !== Array.isArray(b)) return false
  if (Array.isArray(a) && a.length !== (b as unknown[]).length) return false
  const x = a as Record<string, unknown>
  const y = b as Record<string, unknown>
  for (const key of new Set([...Object.keys(x), ...Object.keys(y)])) if (!jsonEqual(x[key], y[key])) return false
  return true
}
