import { describe, expect, it } from 'vitest'
import { describeCondition, describeFlag } from '../src/index.js'

const rule = (operator: string, values: unknown[], variant?: unknown) => ({
  attribute: 'a',
  operator,
  values,
  ...(variant === undefined ? {} : { variant }),
})

describe('describeFlag', () => {
  it('says who gets what from a rule and a rollout', () => {
    const flag = {
      key: 'theme',
      is_enabled: true,
      rollout_percentage: 25,
      rules: [{ attribute: 'country', operator: 'equals', values: ['NL'], variant: false }],
    }
    expect(describeFlag(flag)).toBe(
      'Users matching rule 1 (country is NL) get `false`; of everyone else, 25 % get `true`, the rest `false`',
    )
  })

  it('says a switched-off flag serves its disabled value to everyone', () => {
    expect(describeFlag({ key: 'f', is_enabled: false, rules: [rule('equals', ['x'])] })).toBe(
      'Off: everyone gets `false`',
    )
    expect(describeFlag({ key: 'f', is_enabled: false, flag_type: 'string', disabled_value: 'off' })).toBe(
      'Off: everyone gets `off`',
    )
    expect(describeFlag({ key: 'f', is_enabled: false, flag_type: 'string' })).toBe('Off: everyone gets the fallback')
  })

  it('says everyone gets the default without rules or a rollout', () => {
    expect(describeFlag({ key: 'f', is_enabled: true })).toBe('Everyone gets `true`')
    expect(describeFlag({ key: 'f', is_enabled: true, rollout_percentage: 0 })).toBe('Everyone gets `false`')
    expect(describeFlag({ key: 'f', is_enabled: true, flag_type: 'json', default_value: { a: 1 } })).toBe(
      'Everyone gets `{"a":1}`',
    )
  })

  it('names every operator in words', () => {
    const cases: Array<[string, unknown[], string]> = [
      ['equals', ['NL', 'DE'], 'a is NL or DE'],
      ['not_equals', ['NL', 'DE'], 'a is not NL nor DE'],
      ['contains', ['beta'], 'a contains beta'],
      ['starts_with', ['ops.'], 'a starts with ops.'],
      ['ends_with', ['@acme.test'], 'a ends with @acme.test'],
      ['greater_than', [40], 'a is more than 40'],
      ['greater_than_or_equal', ['40'], 'a is at least 40'],
      ['less_than', [18], 'a is less than 18'],
      ['less_than_or_equal', [20], 'a is at most 20'],
    ]
    for (const [operator, values, words] of cases) {
      const flag = {
        key: 'f',
        is_enabled: true,
        flag_type: 'integer',
        default_value: 0,
        rules: [rule(operator, values, 7)],
      }
      expect(describeFlag(flag)).toBe(`Users matching rule 1 (${words}) get \`7\`; everyone else gets \`0\``)
    }
  })

  it('gives each variant its share of the rollout', () => {
    const variants = [
      { value: 'blue', weight: 3 },
      { value: 'none', weight: 0 },
      { value: 'green', weight: 1 },
    ]
    const base = { key: 'f', is_enabled: true, flag_type: 'string', disabled_value: 'off', variants }
    expect(describeFlag(base)).toBe('75 % get `blue`, 25 % get `green`')
    expect(describeFlag({ ...base, rollout_percentage: 25 })).toBe(
      '18.75 % get `blue`, 6.25 % get `green`, the rest `off`',
    )
    expect(describeFlag({ ...base, rules: [rule('equals', ['x'], 'red')] })).toBe(
      'Users matching rule 1 (a is x) get `red`; of everyone else, 75 % get `blue`, 25 % get `green`',
    )
  })

  it('says everyone gets the one variant that has weight, rather than a 100 % split', () => {
    const base = { key: 'f', is_enabled: true, flag_type: 'string', variants: [{ value: 'control', weight: 1 }] }
    expect(describeFlag(base)).toBe('Everyone gets `control`')
    expect(describeFlag({ ...base, rules: [rule('equals', ['pro'], 'control')] })).toBe(
      'Users matching rule 1 (a is pro) get `control`; everyone else gets `control`',
    )
    expect(describeFlag({ ...base, rollout_percentage: 40, disabled_value: 'off' })).toBe(
      '40 % get `control`, the rest `off`',
    )
  })

  it('lists later rules after the first, a rule without variant serving the default', () => {
    const flag = {
      key: 'f',
      is_enabled: true,
      flag_type: 'string',
      default_value: 'light',
      rules: [rule('equals', ['x'], 'dark'), rule('equals', ['y'])],
    }
    expect(describeFlag(flag)).toBe(
      'Users matching rule 1 (a is x) get `dark`; those matching rule 2 (a is y) get `light`; everyone else gets `light`',
    )
  })

  it('names segments, with their conditions when given', () => {
    const flag = { key: 'f', is_enabled: true, rules: [{ segment_key: 'staff', variant: false }] }
    expect(describeFlag(flag)).toBe('Users matching rule 1 (in segment `staff`) get `false`; everyone else gets `true`')
    const staff = {
      key: 'staff',
      rules: [
        { attribute: 'email', operator: 'ends_with', values: ['@acme.test'] },
        { attribute: 'team', operator: 'equals', values: ['ops'] },
      ],
    }
    expect(describeFlag(flag, [staff])).toBe(
      'Users matching rule 1 (in segment `staff`: email ends with @acme.test, or team is ops) get `false`; everyone else gets `true`',
    )
    expect(describeFlag(flag, [{ key: 'staff', rules: [] }])).toContain('which has no conditions and matches nobody')
  })

  it('puts prerequisites first', () => {
    const flag = {
      key: 'f',
      is_enabled: true,
      rollout_percentage: 50,
      prerequisites: [{ flag_key: 'checkout-v2', required_value: true }, { flag_key: 'gate' }],
    }
    expect(describeFlag(flag)).toBe(
      'Only when `checkout-v2` is `true` and `gate` is on: 50 % get `true`, the rest `false`; otherwise everyone gets `false`',
    )
  })

  it('says an empty string in words, as a served value and in a condition', () => {
    const flag = {
      key: 'f',
      is_enabled: true,
      flag_type: 'string',
      default_value: '',
      rules: [rule('equals', [''], 'set')],
    }
    expect(describeFlag(flag)).toBe('Users matching rule 1 (a is empty) get `set`; everyone else gets an empty string')
  })

  it('reads a rules-and-rollout boolean flag whole, as the flag table shows it', () => {
    const flag = {
      key: 'dark-mode',
      is_enabled: true,
      rollout_percentage: 25,
      rules: [
        { attribute: 'country', operator: 'equals', values: ['NL'], variant: false },
        { attribute: 'plan', operator: 'not_equals', values: ['free', 'trial'] },
      ],
      prerequisites: [{ flag_key: 'new-ui' }],
    }
    expect(describeFlag(flag)).toBe(
      'Only when `new-ui` is on: users matching rule 1 (country is NL) get `false`; those matching rule 2 (plan is not free nor trial) get `true`; of everyone else, 25 % get `true`, the rest `false`; otherwise everyone gets `false`',
    )
  })
})

describe('describeCondition', () => {
  it('names one condition as describeFlag does', () => {
    expect(describeCondition({ attribute: 'country', operator: 'equals', values: ['NL', 'BE'] })).toBe(
      'country is NL or BE',
    )
    expect(describeCondition({ attribute: 'age', operator: 'greater_than_or_equal', values: ['18'] })).toBe(
      'age is at least 18',
    )
  })
})
