import type { EvaluableFlag } from '@flagsync/protocol'
import { describe, expect, it } from 'vitest'
import { evaluate, fromOpenFeatureContext, toResolution } from '../src/index.js'

const banner: EvaluableFlag = {
  key: 'banner',
  is_enabled: true,
  flag_type: 'string',
  default_value: 'none',
  variants: [
    { weight: 1, value: 'blue' },
    { weight: 1, value: 'green' },
  ],
}
const limits: EvaluableFlag = {
  key: 'limits',
  is_enabled: true,
  flag_type: 'json',
  variants: [{ weight: 1, value: { seats: 5 } }],
}
const found = (flag: EvaluableFlag, context: Record<string, unknown>) => ({ flag, result: evaluate(flag, context) })

describe('toResolution', () => {
  it('names a split variant by its value, and by its index only for object values', () => {
    const blue = toResolution('banner', 'x', 'string', found(banner, { user_id: 'u-1' }))
    expect(blue).toMatchObject({ reason: 'SPLIT' })
    expect(blue.variant).toBe(blue.value)
    expect(['blue', 'green']).toContain(blue.value)
    expect(toResolution('limits', {}, 'object', found(limits, { user_id: 'u-1' }))).toEqual({
      value: { seats: 5 },
      reason: 'SPLIT',
      variant: '0',
    })
  })

  it('answers the default with FLAG_NOT_FOUND, TYPE_MISMATCH or the evaluator’s error code', () => {
    expect(toResolution('gone', true, 'boolean', undefined)).toEqual({
      value: true,
      reason: 'ERROR',
      errorCode: 'FLAG_NOT_FOUND',
      errorMessage: 'no flag gone',
    })
    expect(toResolution('banner', 7, 'number', found(banner, { user_id: 'u-1' }))).toMatchObject({
      value: 7,
      reason: 'ERROR',
      errorCode: 'TYPE_MISMATCH',
    })
    expect(toResolution('banner', 'x', 'string', found(banner, {}))).toMatchObject({
      value: 'x',
      reason: 'ERROR',
      errorCode: 'TARGETING_KEY_MISSING',
    })
  })
})

describe('fromOpenFeatureContext', () => {
  it('makes targetingKey the bucketing user_id and keeps the other attributes flat', () => {
    expect(fromOpenFeatureContext({ targetingKey: 'u-42', plan: 'pro' })).toEqual({ user_id: 'u-42', plan: 'pro' })
    expect(fromOpenFeatureContext({ plan: 'pro' })).toEqual({ plan: 'pro' })
  })
})
