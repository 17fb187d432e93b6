import { matchesRule } from '@flagsync/evaluation'
import type { FullTargetingRule, Operator } from '@flagsync/protocol'
import { describe, expect, it } from 'vitest'

const rule = (attribute: string, operator: Operator, values: string[]): FullTargetingRule => ({
  attribute,
  operator,
  values,
})
const matches = (operator: Operator, attribute: unknown, values: string[]) =>
  matchesRule(rule('a', operator, values), { a: attribute })

describe('matchesRule: string operators', () => {
  it.each<[Operator, unknown, string[], boolean]>([
    ['equals', 'DE', ['FR', 'DE'], true],
    ['equals', 'DE', ['FR'], false],
    ['equals', 'de', ['DE'], false], // case-sensitive
    ['equals', 'DE', ['DE '], false],
    ['not_equals', 'DE', ['FR', 'NL'], true],
    ['not_equals', 'DE', ['FR', 'DE'], false],
    ['contains', 'alice@example.com', ['@corp', '@example'], true],
    ['contains', 'alice@example.com', ['@corp'], false],
    ['starts_with', 'beta-tester', ['alpha', 'beta'], true],
    ['starts_with', 'beta-tester', ['tester'], false],
    ['ends_with', 'alice@example.com', ['.org', '.com'], true],
    ['ends_with', 'alice@example.com', ['example'], false],
  ])('%s: %j against %j is %s', (operator, attribute, values, expected) => {
    expect(matches(operator, attribute, values)).toBe(expected)
  })

  it('compares numbers and booleans through their string form', () => {
    expect(matches('equals', 42, ['42'])).toBe(true)
    expect(matches('equals', 1.5, ['1.5'])).toBe(true)
    expect(matches('equals', 1.5, ['1.50'])).toBe(false)
    expect(matches('equals', true, ['true'])).toBe(true)
    expect(matches('equals', false, ['false'])).toBe(true)
    expect(matches('starts_with', 12345, ['123'])).toBe(true)
    expect(matches('not_equals', false, ['true'])).toBe(true)
  })

  it('skips values that are not strings instead of coercing them', () => {
    const values = [1, null, {}] as unknown as string[]
    expect(matches('equals', '1', values)).toBe(false)
    expect(matches('contains', 'a1', values)).toBe(false)
    expect(matches('not_equals', '1', values)).toBe(true)
  })
})

describe('matchesRule: numeric operators', () => {
  it.each<[Operator, unknown, string[], boolean]>([
    ['greater_than', 30, ['18'], true],
    ['greater_than', 18, ['18'], false],
    ['greater_than', '30', ['40', '18'], true], // any value
    ['greater_than', 30, ['40', '50'], false],
    ['greater_than_or_equal', 18, ['18'], true],
    ['greater_than_or_equal', 17.9, ['18'], false],
    ['less_than', 17, ['18'], true],
    ['less_than', 18, ['18'], false],
    ['less_than', -1, ['0'], true],
    ['less_than_or_equal', 18, ['18'], true],
    ['less_than_or_equal', '18.5', ['18'], false],
    ['greater_than', '1e3', ['999'], true],
    ['less_than', '.5', ['1'], true],
    ['greater_than', '+5', ['-5.5'], true],
    ['greater_than', '5.', ['4'], true],
  ])('%s: %j against %j is %s', (operator, attribute, values, expected) => {
    expect(matches(operator, attribute, values)).toBe(expected)
  })

  const numeric: Operator[] = ['greater_than', 'greater_than_or_equal', 'less_than', 'less_than_or_equal']
  const notNumbers: unknown[] = [
    '',
    ' ',
    ' 5',
    '5 ',
    '0x10',
    '0b1',
    '1_000',
    'Infinity',
    '-Infinity',
    'NaN',
    '1e999',
    'abc',
    '5px',
    true,
    false,
    Number.NaN,
    Number.POSITIVE_INFINITY,
    null,
    [],
    {},
  ]

  it.each(numeric)('%s never matches a non-numeric attribute and never throws', (operator) => {
    for (const attribute of notNumbers) {
      // Bounds on both sides, so a parse of the attribute to any number would match one of them.
      expect(matches(operator, attribute, ['-1e300', '1e300']), String(attribute)).toBe(false)
    }
  })

  it.each(numeric)('%s never matches a non-numeric rule value', (operator) => {
    for (const value of notNumbers.filter((v): v is string => typeof v === 'string')) {
      expect(matches(operator, 0, [value]), value).toBe(false)
    }
    // …but another, numeric value of the same rule still can.
    expect(matches(operator, 0, ['abc', operator.startsWith('greater') ? '-1' : '1'])).toBe(true)
  })
})

describe('matchesRule: what never matches', () => {
  const operators: Operator[] = [
    'equals',
    'not_equals',
    'contains',
    'starts_with',
    'ends_with',
    'greater_than',
    'greater_than_or_equal',
    'less_than',
    'less_than_or_equal',
  ]

  it.each(operators)('%s with the attribute missing, null or not a scalar (including not_equals)', (operator) => {
    for (const context of [{}, { a: undefined }, { a: null }, { a: { x: 1 } }, { a: ['x'] }, { a: Number.NaN }]) {
      expect(matchesRule(rule('a', operator, ['x', '1']), context)).toBe(false)
    }
  })

  it('a rule that still references a segment, even with an attribute check beside it', () => {
    expect(matchesRule({ segment_key: 'beta-users' }, { a: 'x' })).toBe(false)
    expect(matchesRule({ ...rule('a', 'equals', ['x']), segment_key: 'beta-users' }, { a: 'x' })).toBe(false)
    expect(matchesRule({ ...rule('a', 'equals', ['x']), segment_key: null }, { a: 'x' })).toBe(true)
  })

  it('an unknown operator (forward compatibility) or an unreadable rule', () => {
    expect(matchesRule({ attribute: 'a', operator: 'matches_regex', values: ['x'] } as never, { a: 'x' })).toBe(false)
    expect(matchesRule({ operator: 'equals', values: ['x'] }, { a: 'x' })).toBe(false)
    expect(matchesRule({ attribute: 'a', operator: 'equals', values: 'x' } as never, { a: 'x' })).toBe(false)
    expect(matchesRule(null as never, { a: 'x' })).toBe(false)
    expect(matchesRule('equals' as never, { a: 'x' })).toBe(false)
  })

  it('an inherited property of the context object', () => {
    expect(matchesRule(rule('constructor', 'contains', ['Object']), {})).toBe(false)
    expect(matchesRule(rule('toString', 'not_equals', ['x']), {})).toBe(false)
  })
})
