/** Evaluations over time per served value: what the impressions chart draws. */
export interface Series {
  /** Bucket starts, epoch seconds (uPlot's x unit), oldest first, one per bucket without gaps. */
  times: number[]
  /** served value (as reported) → evaluations per bucket, aligned with `times`. */
  counts: Map<string, number[]>
  bucketMs: number
}

const STEPS_MS = [60_000, 5 * 60_000, 15 * 60_000, 60 * 60_000, 6 * 60 * 60_000, 24 * 60 * 60_000]

/** The smallest of minute, 5 min, 15 min, hour, 6 h, day that keeps the span within `maxBuckets` buckets. */
export function bucketSize(spanMs: number, maxBuckets = 60): number {
  return STEPS_MS.find((step) => spanMs / step <= maxBuckets) ?? (STEPS_MS.at(-1) as number)
}

/**
 * Buckets impressions by `evaluated_at` (aligned to the bucket size, in UTC)
 * and served value. Empty buckets between the first and the last are kept as
 * zeros, so the chart's lines do not skip over quiet periods. Unparseable
 * times are left out.
 */
export function bucketImpressions(
  items: ReadonlyArray<{ value: string; evaluated_at: string }>,
  bucketMs?: number,
): Series {
  const points = items
    .map((i) => ({ value: i.value, at: Date.parse(i.evaluated_at) }))
    .filter((p) => Number.isFinite(p.at))
  if (points.length === 0) return { times: [], counts: new Map(), bucketMs: bucketMs ?? STEPS_MS[0] ?? 60_000 }
  let min = Number.POSITIVE_INFINITY
  let max = Number.NEGATIVE_INFINITY
  for (const p of points) {
    min = Math.min(min, p.at)
    max = Math.max(max, p.at)
  }
  const size = bucketMs ?? bucketSize(max - min)
  const first = Math.floor(min / size) * size
  const n = Math.floor(max / size) - first / size + 1
  const times = Array.from({ length: n }, (_, i) => (first + i * size) / 1000)
  const counts = new Map<string, number[]>()
  for (const p of points) {
    let row = counts.get(p.value)
    if (!row) {
      row = new Array<number>(n).fill(0)
      counts.set(p.value, row)
    }
    const index = Math.floor(p.at / size) - first / size
    row[index] = (row[index] ?? 0) + 1
  }
  return { times, counts: new Map([...counts].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))), bucketMs: size }
}
