/**
 * Whether two values read as the same JSON, key order aside, without
 * serializing them: what `JSON.stringify` leaves out of an object (undefined,
 * functions, symbols) is absent, and what it writes as null (those in an
 * array, non-finite numbers) is null. Plain data only: a `toJSON` method
 * (a Date) is not followed, as flags and records never hold one. So
 * `jsonEqual({ a: 1, b: undefined }, { a: 1 })` and `jsonEqual([NaN], [null])`
 * hold, `jsonEqual({ a: null }, {})` and `jsonEqual(undefined, null)` do not.
 * The one comparison of flag values, flags and records: the evaluator's
 * prerequisite check, the store's "a put that changes nothing", the
 * receiver's conflict check.
 */
export function jsonEqual(a: unknown, b: unknown): boolean {
  return same(a, b, false)
}

/** `jsonEqual`, with what JSON.stringify leaves out read as null when `inArray`. */
function same(a: unknown, b: unknown, inArray: boolean): boolean {
  let x = asJson(a)
  let y = asJson(b)
  if (inArray) {
    x ??= null
    y ??= null
  }
  if (x === y) return true
  if (typeof x !== 'object' || typeof y !== 'object' || !x || !y) return false
  const list = Array.isArray(x)
  if (list !== Array.isArray(y) || (list && (x as unknown[]).length !== (y as unknown[]).length)) return false
  const mine = x as Record<string, unknown>
  const theirs = y as Record<string, unknown>
  for (const key of new Set([...Object.keys(mine), ...Object.keys(theirs)])) {
    if (!same(mine[key], theirs[key], list)) return false
  }
  return true
}

/** A value as JSON.stringify sees it before looking inside: null for a non-finite number, undefined for what it leaves out. */
function asJson(v: unknown): unknown {
  if (typeof v === 'number') return Number.isFinite(v) ? v : null
  return typeof v === 'function' || typeof v === 'symbol' ? undefined : v
}
