/** Exponential backoff with jitter, shared by every retrying client (outbox delivery, stream reconnects). */
export interface RetryPolicy {
  /** First retry delay. Default 1000 ms. */
  baseMs: number
  /** Growth per failed attempt. Default 2. */
  factor: number
  /** Ceiling of the delay before jitter. Default 60 000 ms. */
  maxMs: number
  /** Extra random share added on top, 0..1. Default 0.3 (so the longest wait is 78 s). */
  jitter: number
  /** A `Retry-After` longer than the backoff wins, but never beyond this. Default 300 000 ms. */
  maxRetryAfterMs: number
}

/** 1 s doubling up to 60 s, plus 0–30 % jitter; a Retry-After may stretch a wait to 5 min. */
export const DEFAULT_RETRY_POLICY: Readonly<RetryPolicy> = Object.freeze({
  baseMs: 1000,
  factor: 2,
  maxMs: 60_000,
  jitter: 0.3,
  maxRetryAfterMs: 300_000,
})

/**
 * Delay before retry number `attempt` (0 for the first retry):
 * `min(maxMs, baseMs * factor^attempt) * (1 + jitter * random())`. The jitter
 * only ever adds, so tabs and devices that failed together spread out without
 * any retry coming sooner than the plain schedule.
 *
 * @example
 * ```ts
 * computeBackoff(3, DEFAULT_RETRY_POLICY, Math.random) // 8 000 to 10 400 ms: 1 s doubled three times, +0–30 %
 * ```
 */
export function computeBackoff(attempt: number, policy: RetryPolicy, random: () => number): number {
  const exponent = Math.max(0, Math.floor(attempt))
  const plain = Math.min(policy.maxMs, policy.baseMs * policy.factor ** exponent)
  const r = Math.min(1, Math.max(0, random()))
  return Math.round(plain * (1 + policy.jitter * r))
}

const DELTA_SECONDS = /^\s*(\d+)\s*$/

/**
 * Milliseconds to wait according to a `Retry-After` header: delta-seconds or
 * an HTTP date (relative to `now`). Null when absent or unreadable; never negative.
 */
export function parseRetryAfter(header: string | null | undefined, now: number): number | null {
  // Blank is no date either (Date.parse('') is NaN).
  if (header == null) return null
  const seconds = DELTA_SECONDS.exec(header)
  if (seconds) return Number(seconds[1]) * 1000
  // A signed or fractional number is neither delta-seconds nor a date (Date.parse('-5') is year -5).
  if (/^\s*[+-]?[\d.]+\s*$/.test(header)) return null
  const date = Date.parse(header)
  if (Number.isNaN(date)) return null
  return Math.max(0, date - now)
}

/** The wait before the next attempt: the backoff, or the Retry-After when longer (capped). */
export function retryDelay(
  attempt: number,
  retryAfterMs: number | null,
  policy: RetryPolicy,
  random: () => number,
): number {
  const backoff = computeBackoff(attempt, policy, random)
  if (retryAfterMs === null) return backoff
  return Math.max(backoff, Math.min(retryAfterMs, policy.maxRetryAfterMs))
}

/** Fills in the defaults and rejects nonsense (negative, NaN, factor below 1). */
export function resolveRetryPolicy(input: Partial<RetryPolicy> | undefined): RetryPolicy | string {
  const policy: RetryPolicy = { ...DEFAULT_RETRY_POLICY }
  for (const key of Object.keys(policy) as (keyof RetryPolicy)[]) {
    const value: unknown = input?.[key] === undefined ? policy[key] : input[key]
    if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) {
      return `retry.${key} must be a finite number >= 0`
    }
    policy[key] = value
  }
  if (policy.factor < 1) return 'retry.factor must be >= 1'
  if (policy.jitter > 1) return 'retry.jitter must be between 0 and 1'
  return policy
}
