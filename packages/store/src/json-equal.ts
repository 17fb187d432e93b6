/**
 * Whether `value` serializes to the same JSON as `stored` (a value parsed from
 * JSON), key order aside: what `JSON.stringify` drops from an object
 * (undefined, functions, symbols) is absent, what it turns into null in an
 * array (those, and non-finite numbers) is null. Compares without
 * serializing, so the check costs no more than a walk of the two values.
 */
export function jsonEqual(value: unknown, stored: unknown): boolean {
  if (value === stored) return true
  if (typeof value === 'number') return Number.isFinite(value) ? value === stored : stored === null
  if (typeof value !== 'object' || value === null || typeof stored !== 'object' || stored === null) {
    return isNullInArray(value) && stored === null
  }
  const toJSON = (value as { toJSON?: unknown }).toJSON
  if (typeof toJSON === 'function') return jsonEqual((toJSON as () => unknown).call(value), stored)
  if (Array.isArray(value)) {
    if (!Array.isArray(stored) || value.length !== stored.length) return false
    for (let i = 0; i < value.length; i++) {
      const item = value[i]
      if (!jsonEqual(isNullInArray(item) ? null : item, stored[i])) return false
    }
    return true
  }
  if (Array.isArray(stored)) return false
  const theirs = stored as Record<string, unknown>
  let present = 0
  for (const key of Object.keys(value)) {
    const mine = (value as Record<string, unknown>)[key]
    if (isDropped(mine)) continue
    present++
    if (!Object.hasOwn(theirs, key) || !jsonEqual(mine, theirs[key])) return false
  }
  return present === Object.keys(theirs).length
}

/** Object members JSON.stringify leaves out. */
const isDropped = (v: unknown) => v === undefined || typeof v === 'function' || typeof v === 'symbol'

/** Array items JSON.stringify writes as null. */
const isNullInArray = (v: unknown) => isDropped(v) || (typeof v === 'number' && !Number.isFinite(v))
