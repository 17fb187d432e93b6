/** A JSON value: what `JSON.parse` can return. */
export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue }

/** Nesting deeper than this is refused (the servers' body parsers stop at 64 levels already). */
const MAX_JSON_DEPTH = 100

/**
 * Whether `value` is JSON data: null, booleans, finite numbers, strings, and arrays and plain objects of them, at
 * most `MAX_JSON_DEPTH` deep (so a cyclic object is refused, not followed forever). Checked in place: keys such as
 * `__proto__` are data here, as `JSON.parse` makes them.
 */
export function isJsonValue(value: unknown, depth = 0): value is JsonValue {
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return true
  if (typeof value === 'number') return Number.isFinite(value)
  if (typeof value !== 'object' || depth >= MAX_JSON_DEPTH) return false
  if (Array.isArray(value)) return value.every((v) => isJsonValue(v, depth + 1))
  const proto = Object.getPrototypeOf(value)
  if (proto !== Object.prototype && proto !== null) return false
  return Object.values(value).every((v) => isJsonValue(v, depth + 1))
}
