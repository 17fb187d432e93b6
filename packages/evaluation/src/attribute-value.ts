/**
 * The text of an attribute for the string operators and of `user_id` for
 * bucketing: strings as they are, finite numbers through `String()` (so `42`
 * is `"42"` and `1.50` is `"1.5"`), booleans as `"true"`/`"false"`. Anything
 * else (absent, null, NaN, objects, arrays) is `undefined`, which never matches.
 */
export function textOf(value: unknown): string | undefined {
  switch (typeof value) {
    case 'string':
      return value
    case 'number':
      return Number.isFinite(value) ? String(value) : undefined
    case 'boolean':
      return value ? 'true' : 'false'
    default:
      return undefined
  }
}

/**
 * A plain decimal literal: optional sign, digits with an optional fraction,
 * optional exponent. Stricter than `Number()`, which turns `''` and `' '` into
 * 0 and reads `'0x10'` as 16; a targeting rule should never match by accident.
 */
const DECIMAL = /^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$/

/**
 * The number of an attribute or rule value for the numeric operators, or NaN
 * when it has none: finite numbers as they are, strings that are a whole
 * decimal literal (no surrounding spaces, no hex, no `Infinity`, no overflow to
 * Infinity). Booleans and everything else are not numbers.
 */
export function numberOf(value: unknown): number {
  if (typeof value === 'number') return Number.isFinite(value) ? value : Number.NaN
  if (typeof value !== 'string' || !DECIMAL.test(value)) return Number.NaN
  const n = Number(value)
  return Number.isFinite(n) ? n : Number.NaN
}
