import { computeBackoff, DEFAULT_RETRY_POLICY, parseRetryAfter, retryDelay } from '@flagsync/protocol'
import { describe, expect, it } from 'vitest'

describe('computeBackoff', () => {
  const policy = DEFAULT_RETRY_POLICY

  it('defaults: 1 s doubling, capped at 60 s', () => {
    const delays = Array.from({ length: 9 }, (_, attempt) => computeBackoff(attempt, policy, () => 0))
    expect(delays).toEqual([1000, 2000, 4000, 8000, 16_000, 32_000, 60_000, 60_000, 60_000])
    expect(computeBackoff(10_000, policy, () => 0)).toBe(60_000)
  })

  it('adds 0–30 % jitter on top, never less than the plain delay', () => {
    expect(computeBackoff(0, policy, () => 0.5)).toBe(1150)
    expect(computeBackoff(0, policy, () => 0.999_999)).toBe(1300)
    expect(computeBackoff(20, policy, () => 1)).toBe(78_000)
  })

  it('follows a custom policy', () => {
    const custom = { ...policy, baseMs: 200, factor: 3, maxMs: 5000, jitter: 0 }
    expect([0, 1, 2, 3].map((a) => computeBackoff(a, custom, Math.random))).toEqual([200, 600, 1800, 5000])
  })
})

describe('parseRetryAfter', () => {
  const now = Date.parse('2026-01-01T00:00:00Z')

  it('reads delta-seconds', () => {
    expect(parseRetryAfter('120', now)).toBe(120_000)
    expect(parseRetryAfter(' 0 ', now)).toBe(0)
  })

  it('reads an HTTP date relative to now, never negative', () => {
    expect(parseRetryAfter('Thu, 01 Jan 2026 00:00:30 GMT', now)).toBe(30_000)
    expect(parseRetryAfter('Wed, 31 Dec 2025 23:00:00 GMT', now)).toBe(0)
  })

  it('ignores a missing or unreadable header', () => {
    expect(parseRetryAfter(null, now)).toBeNull()
    expect(parseRetryAfter('', now)).toBeNull()
    expect(parseRetryAfter(undefined, now)).toBeNull()
    expect(parseRetryAfter(' \t ', now)).toBeNull()
    expect(parseRetryAfter('soon', now)).toBeNull()
  })

  it('refuses signed and fractional numbers instead of reading them as dates', () => {
    expect(parseRetryAfter('-5', now)).toBeNull()
    expect(parseRetryAfter('+5', now)).toBeNull()
    expect(parseRetryAfter('1.5', now)).toBeNull()
  })
})

describe('retryDelay', () => {
  it('lets a longer Retry-After win, capped at maxRetryAfterMs', () => {
    const zero = () => 0
    expect(retryDelay(0, 7000, DEFAULT_RETRY_POLICY, zero)).toBe(7000)
    expect(retryDelay(3, 1000, DEFAULT_RETRY_POLICY, zero)).toBe(8000)
    expect(retryDelay(0, 3_600_000, DEFAULT_RETRY_POLICY, zero)).toBe(300_000)
  })
})
