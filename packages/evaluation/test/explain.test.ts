import type { EvaluableFlag } from '@flagsync/protocol'
import { describe, expect, it } from 'vitest'
import { bucket, evaluate, explain } from '../src/index.js'

const base = { key: 'theme', is_enabled: true, flag_type: 'string', default_value: 'light', disabled_value: 'off' }

describe('explain', () => {
  it('names the matching rule by index', () => {
    const flag = {
      ...base,
      rules: [
        { attribute: 'country', operator: 'equals', values: ['DE'], variant: 'de' },
        { attribute: 'country', operator: 'equals', values: ['NL'], variant: 'dark' },
      ],
    } as unknown as EvaluableFlag
    expect(explain(flag, { country: 'NL' })).toEqual({ value: 'dark', reason: 'TARGETING_MATCH', ruleIndex: 1 })
  })

  it('gives the rollout bucket of a split, inside or outside', () => {
    const flag = { ...base, rollout_percentage: 50 } as unknown as EvaluableFlag
    for (const id of ['u-1', 'u-2', 'u-3', 'u-4', 'u-5']) {
      const b = bucket('theme', id)
      expect(explain(flag, { user_id: id })).toEqual({ ...evaluate(flag, { user_id: id }), bucket: b })
      expect(explain(flag, { user_id: id }).value).toBe(b < 50 ? 'light' : 'off')
    }
  })

  it('gives the bucket and variant of a weighted split', () => {
    const flag = {
      ...base,
      variants: [
        { value: 'a', weight: 1 },
        { value: 'b', weight: 1 },
      ],
    } as unknown as EvaluableFlag
    const result = explain(flag, { user_id: 'u-9' })
    expect(result).toMatchObject({ reason: 'SPLIT', bucket: bucket('theme', 'u-9') })
    expect(result.variant).toBe(evaluate(flag, { user_id: 'u-9' }).variant)
  })

  it('adds nothing to a default, a disabled flag, a 0 % rollout or an error', () => {
    expect(explain(base as unknown as EvaluableFlag, {})).toEqual({ value: 'light', reason: 'DEFAULT' })
    const off = { ...base, is_enabled: false } as unknown as EvaluableFlag
    expect(explain(off, { user_id: 'u' })).toEqual({ value: 'off', reason: 'DISABLED' })
    const none = { ...base, rollout_percentage: 0 } as unknown as EvaluableFlag
    expect(explain(none, {})).toEqual({ value: 'off', reason: 'SPLIT' })
    const split = { ...base, rollout_percentage: 10 } as unknown as EvaluableFlag
    expect(explain(split, {})).toMatchObject({ reason: 'ERROR', errorCode: 'TARGETING_KEY_MISSING' })
  })
})
