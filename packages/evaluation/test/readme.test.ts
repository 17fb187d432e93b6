import { evaluate } from '@flagsync/evaluation'
import type { EvaluableFlag } from '@flagsync/protocol'
import { describe, expect, it } from 'vitest'

// The README's opening sample, with the results it claims.
const flag: EvaluableFlag = {
  key: 'checkout-layout',
  is_enabled: true,
  rollout_percentage: 50,
  flag_type: 'string',
  default_value: 'classic',
  disabled_value: 'classic',
  rules: [{ attribute: 'email', operator: 'ends_with', values: ['@example.com'], variant: 'redesign' }],
  variants: [
    { weight: 1, value: 'redesign' },
    { weight: 3, value: 'compact' },
  ],
}

const flags = new Map<string, EvaluableFlag>([[flag.key, flag]])
function getValue<T>(key: string, context: Record<string, unknown>, fallback: T): T {
  const found = flags.get(key)
  if (!found) return fallback
  const { value } = evaluate(found, context, (k) => flags.get(k))
  return value === undefined ? fallback : (value as T)
}

describe('README sample', () => {
  it('gives the results the README shows', () => {
    expect(evaluate(flag, { user_id: 'u-1', email: 'ann@example.com' })).toEqual({
      value: 'redesign',
      reason: 'TARGETING_MATCH',
    })
    expect(evaluate(flag, { user_id: 'u-6' })).toEqual({ value: 'compact', reason: 'SPLIT', variant: '1' })
    expect(evaluate(flag, { user_id: 'u-1' })).toEqual({ value: 'classic', reason: 'SPLIT' })
    expect(evaluate({ ...flag, is_enabled: false }, {})).toEqual({ value: 'classic', reason: 'DISABLED' })
    expect(evaluate(flag, {})).toMatchObject({ value: undefined, reason: 'ERROR', errorCode: 'TARGETING_KEY_MISSING' })
  })

  it('getValue falls back on a missing flag and on errors only', () => {
    expect(getValue('checkout-layout', { user_id: 'u-6' }, 'fallback')).toBe('compact')
    expect(getValue('checkout-layout', {}, 'fallback')).toBe('fallback')
    expect(getValue('nope', { user_id: 'u-6' }, 'fallback')).toBe('fallback')
  })
})
