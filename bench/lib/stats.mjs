// Small statistics helpers shared by the benchmarks.

/** @param {number[]} values */
export function median(values) {
  if (values.length === 0) return Number.NaN
  const sorted = [...values].sort((a, b) => a - b)
  const mid = sorted.length >> 1
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2
}

/**
 * Nearest-rank percentile (p in 0..100) of an unsorted array.
 * @param {ArrayLike<number>} values
 * @param {number} p
 */
export function percentile(values, p) {
  if (values.length === 0) return Number.NaN
  const sorted = Float64Array.from(values).sort()
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))
  return sorted[rank]
}

/** Rounds to a few significant digits for the table and JSON. @param {number} x */
export function round(x, digits = 3) {
  if (!Number.isFinite(x) || x === 0) return x
  const magnitude = Math.floor(Math.log10(Math.abs(x)))
  const factor = 10 ** Math.max(0, digits - 1 - magnitude)
  return Math.round(x * factor) / factor
}

/** A monotonic clock in ms with sub-ms resolution. */
export const now = () => performance.now()

/** Wall-clock epoch ms with sub-ms resolution, comparable across processes. */
export const epochMs = () => performance.timeOrigin + performance.now()

/** @param {number} ms */
export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))
