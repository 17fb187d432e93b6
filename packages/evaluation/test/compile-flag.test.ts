import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { checkFlag } from '../src/check-flag.js'
import { CompiledFlags, decisionOf, slotOf } from '../src/compile-flag.js'
import { decideChecked } from '../src/decide.js'
import type { EvaluationContext, GetFlag } from '../src/types.js'

// Small pools, so rules, contexts and prerequisites meet often: matches, misses and numeric edges all happen.
const ATTRIBUTES = ['plan', 'age', 'email']
const TEXTS = ['pro', 'free', 'DE', 'de', 'x@example.com', '', '10', '2.5', '-3', '1e2', ' 7', '0x10', 'Infinity']
const NUMBERS = ['0', '1', '5', '10', '50', '2.5', '-3', '1e2']
const OPERATORS = [
  'equals',
  'not_equals',
  'contains',
  'starts_with',
  'ends_with',
  'greater_than',
  'greater_than_or_equal',
  'less_than',
  'less_than_or_equal',
  'regex', // an operator this evaluator does not know
]
const KEYS = ['a', 'b', 'c', 'ünï']

const valueArb = fc.oneof(
  fc.constantFrom(...TEXTS),
  fc.constantFrom(0, 2.5, 10, -3, 100, Number.NaN, Number.POSITIVE_INFINITY),
  fc.integer({ min: -5, max: 120 }),
  fc.constantFrom(...NUMBERS),
  fc.boolean(),
  fc.constant(null),
  fc.string({ maxLength: 4 }),
)

const ruleArb = fc.oneof(
  {
    arbitrary: fc.record(
      {
        attribute: fc.constantFrom(...ATTRIBUTES),
        operator: fc.constantFrom(...OPERATORS),
        values: fc.array(fc.oneof(fc.constantFrom(...TEXTS, ...NUMBERS), fc.integer({ min: -5, max: 5 })), {
          maxLength: 4,
        }),
        segment_key: fc.constantFrom(undefined, null, 'vip'), // an unexpanded segment never matches
        variant: fc.constantFrom(undefined, 'red', true),
      },
      { requiredKeys: ['attribute', 'operator', 'values'] },
    ),
    weight: 8,
  },
  { arbitrary: fc.constantFrom(null, 'rule', { attribute: 4, operator: 'equals', values: [] }), weight: 1 },
)

const variantArb = fc.oneof(
  fc.record({ value: fc.constantFrom('red', 'blue', 1), weight: fc.constantFrom(0, 1, 33.5, 50, -1, 'x') }),
  fc.constant(null),
)

const flagArb = fc.record(
  {
    key: fc.constantFrom(...KEYS),
    is_enabled: fc.boolean(),
    rollout_percentage: fc.constantFrom(undefined, null, 0, 1, 50, 99, 100),
    rules: fc.array(ruleArb, { maxLength: 4 }),
    variants: fc.option(fc.array(variantArb, { maxLength: 4 }), { nil: undefined }),
    prerequisites: fc.option(
      fc.array(fc.record({ flag_key: fc.constantFrom(...KEYS), required_value: fc.constantFrom(undefined, true) })),
      { nil: undefined },
    ),
  },
  { requiredKeys: ['key', 'is_enabled'] },
)

const contextArb = fc.dictionary(fc.constantFrom(...ATTRIBUTES, 'user_id'), valueArb, { maxKeys: 5 })

/** The slot `decideChecked` reaches, or the code of what it throws. */
function interpreted(flag: never, context: EvaluationContext, getFlag: GetFlag): number | string {
  try {
    return slotOf(decideChecked(flag, context, getFlag), flag)
  } catch (error) {
    return (error as { code?: string }).code ?? (error as Error).name
  }
}

/** The slot the compiled set gives flag `index` for the context it began, or the code of what it throws. */
function compiled(set: CompiledFlags, index: number): number | string {
  try {
    return set.slot(index)
  } catch (error) {
    return (error as { code?: string }).code ?? (error as Error).name
  }
}

describe('CompiledFlags', () => {
  it('decides as decideChecked does: every operator, segments, prerequisites, variants, disabled, rollouts', () => {
    fc.assert(
      fc.property(
        fc.array(flagArb, { minLength: 1, maxLength: 4 }),
        fc.array(contextArb, { maxLength: 8 }),
        (set, contexts) => {
          const byKey = new Map(set.map((flag) => [flag.key, flag]))
          const getFlag: GetFlag = (key) => byKey.get(key) as never
          for (const flag of set) {
            checkFlag(flag)
            const one = new CompiledFlags([flag], getFlag)
            for (const context of contexts) {
              one.begin(context)
              expect(compiled(one, 0)).toEqual(interpreted(flag as never, context, getFlag))
            }
          }
        },
      ),
      { numRuns: 3000 },
    )
  })

  it('decides as decideChecked with rule results shared across the set, context after context', () => {
    fc.assert(
      fc.property(
        fc.array(flagArb, { minLength: 1, maxLength: 6 }),
        fc.array(contextArb, { minLength: 2, maxLength: 8 }),
        (set, contexts) => {
          const byKey = new Map(set.map((flag) => [flag.key, flag]))
          const getFlag: GetFlag = (key) => byKey.get(key) as never
          for (const flag of set) checkFlag(flag)
          const all = new CompiledFlags(set as never, getFlag)
          for (const context of contexts) {
            all.begin(context)
            // Asked in reverse too: a rule's result must not depend on which flag tested it first.
            const order = contexts.indexOf(context) % 2 === 0 ? set.keys() : [...set.keys()].reverse()
            for (const i of order) {
              expect(compiled(all, i)).toEqual(interpreted(set[i] as never, context, getFlag))
            }
          }
        },
      ),
      { numRuns: 3000 },
    )
  })

  it('reads a slot back as the decision it stands for', () => {
    const flag = { key: 'k', is_enabled: true, rules: [{}, {}], variants: [{}, {}, {}] }
    for (let slot = 0; slot < 4 + 2 + 3; slot++) expect(slotOf(decisionOf(slot, flag), flag)).toBe(slot)
  })

  it('buckets a rollout exactly as decideChecked, for many users', () => {
    const flag = {
      key: 'rollout-ü',
      is_enabled: true,
      rollout_percentage: 37,
      variants: [{ weight: 1 }, { weight: 2 }],
    }
    const set = new CompiledFlags([flag], undefined)
    for (let i = 0; i < 2000; i++) {
      const context = { user_id: i % 3 === 0 ? `user-${i}-é😀` : i }
      set.begin(context)
      expect(set.slot(0)).toBe(slotOf(decideChecked(flag, context, undefined), flag))
    }
  })
})
