const UNITS: Record<string, number> = { b: 1, kb: 2 ** 10, mb: 2 ** 20, gb: 2 ** 30, tb: 2 ** 40, pb: 2 ** 50 }

/** A limit as body-parser's `bytes` reads it: a number of bytes, or '100kb', '1mb', '1.5 MB' (units of 1024). */
export function byteLimit(limit: number | string): number {
  if (typeof limit === 'number') return limit
  const match = /^\s*(\d+(?:\.\d+)?)\s*(b|kb|mb|gb|tb|pb)?\s*$/i.exec(limit)
  if (!match) throw new TypeError(`not a byte size: ${JSON.stringify(limit)}`)
  return Math.floor(Number(match[1]) * (UNITS[(match[2] ?? 'b').toLowerCase()] ?? 1))
}
