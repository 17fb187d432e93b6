import { describe, expect, it } from 'vitest'
import type { ServiceFlag } from '../../src/flags/model.js'
import { servesOneValue, staleOf } from '../../src/flags/stale.js'
import { DAY, T0 } from '../harness.js'

const flag = (fields: Partial<ServiceFlag> = {}): ServiceFlag => ({
  key: 'f',
  is_enabled: true,
  rollout_percentage: null,
  description: null,
  rules: [],
  flag_type: 'boolean',
  variants: [],
  prerequisites: [],
  ...fields,
})

const iso = (ms: number) => new Date(ms).toISOString()

describe('servesOneValue', () => {
  it('holds for a flag that is off, fully rolled out, at 0 %, or split between equal values', () => {
    expect(
      servesOneValue(flag({ is_enabled: false, rules: [{ attribute: 'a', operator: 'equals', values: ['x'] }] })),
    ).toBe(true)
    expect(servesOneValue(flag())).toBe(true)
    expect(servesOneValue(flag({ rollout_percentage: 100 }))).toBe(true)
    expect(servesOneValue(flag({ rollout_percentage: 0 }))).toBe(true)
    const sameValue = [
      { weight: 1, value: 'blue' },
      { weight: 3, value: 'blue' },
      { weight: 0, value: 'red' },
    ]
    expect(servesOneValue(flag({ flag_type: 'string', default_value: 'x', variants: sameValue }))).toBe(true)
    // Outside a partial rollout the off value is served: one value only when it equals the on value.
    expect(
      servesOneValue(flag({ flag_type: 'string', rollout_percentage: 40, default_value: 'a', disabled_value: 'a' })),
    ).toBe(true)
  })

  it('fails for rules, prerequisites, a partial rollout of two values, or a split between values', () => {
    expect(servesOneValue(flag({ rules: [{ attribute: 'plan', operator: 'equals', values: ['pro'] }] }))).toBe(false)
    expect(servesOneValue(flag({ prerequisites: [{ flag_key: 'other' }] }))).toBe(false)
    expect(servesOneValue(flag({ rollout_percentage: 50 }))).toBe(false)
    const split = [
      { weight: 1, value: 'blue' },
      { weight: 1, value: 'red' },
    ]
    expect(servesOneValue(flag({ flag_type: 'string', variants: split }))).toBe(false)
  })
})

describe('staleOf, with an injected clock', () => {
  const base = { afterDays: 30, lastEvaluatedAt: null, createdAt: T0, lastChangedAt: T0 }

  it('one_value once a context-free flag has not changed for the whole period, since its last change', () => {
    expect(staleOf({ ...base, flag: flag(), now: T0 + 30 * DAY - 1 })).toBe(null)
    expect(staleOf({ ...base, flag: flag(), lastEvaluatedAt: T0 + 29 * DAY, now: T0 + 30 * DAY })).toEqual({
      reason: 'one_value',
      since: iso(T0),
    })
    expect(staleOf({ ...base, flag: flag({ is_enabled: false }), afterDays: 7, now: T0 + 7 * DAY })).toEqual({
      reason: 'one_value',
      since: iso(T0),
    })
  })

  it('not_evaluated after the period without an evaluation, since the last one, or its creation', () => {
    const targeted = flag({ rules: [{ attribute: 'plan', operator: 'equals', values: ['pro'] }] })
    const now = T0 + 100 * DAY
    expect(staleOf({ ...base, flag: targeted, lastChangedAt: now - DAY, now })).toEqual({
      reason: 'not_evaluated',
      since: iso(T0),
    })
    expect(staleOf({ ...base, flag: targeted, lastEvaluatedAt: now - 31 * DAY, now })).toEqual({
      reason: 'not_evaluated',
      since: iso(now - 31 * DAY),
    })
    expect(staleOf({ ...base, flag: targeted, lastEvaluatedAt: now - 29 * DAY, now })).toBe(null)
  })

  it('a flag younger than the period is not stale for lack of evaluations', () => {
    const targeted = flag({ rollout_percentage: 10 })
    const created = T0 + 80 * DAY
    expect(staleOf({ ...base, flag: targeted, createdAt: created, lastChangedAt: created, now: T0 + 100 * DAY })).toBe(
      null,
    )
  })
})
