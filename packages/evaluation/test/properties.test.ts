import { bucket, type EvaluationResult, evaluate, type GetFlag, VARIANT_SEED } from '@flagsync/evaluation'
import type { EvaluableFlag } from '@flagsync/protocol'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'

const REASONS = ['DISABLED', 'TARGETING_MATCH', 'SPLIT', 'DEFAULT', 'ERROR']
const ERROR_CODES = ['PARSE_ERROR', 'TYPE_MISMATCH', 'TARGETING_KEY_MISSING', 'INVALID_CONTEXT', 'GENERAL']

/** What every result must look like, whatever went in. */
function expectWellFormed(result: EvaluationResult): void {
  expect(REASONS).toContain(result.reason)
  if (result.reason === 'ERROR') {
    expect(result.value).toBeUndefined()
    expect(ERROR_CODES).toContain(result.errorCode)
    expect(typeof result.errorMessage).toBe('string')
  } else {
    expect(result.errorCode).toBeUndefined()
  }
}

// Flags that are mostly well-formed, with any field liable to be anything, so
// that generated cases reach rules, rollout, variants and prerequisites.
const keys = fc.constantFrom('a', 'b', 'c')
const maybe = <T>(arb: fc.Arbitrary<T>) =>
  fc.oneof({ weight: 19, arbitrary: arb }, { weight: 1, arbitrary: fc.anything() })
const json = fc.json().map((text) => JSON.parse(text) as unknown)
type Type = 'boolean' | 'string' | 'integer' | 'json'
/** Values of the flag's type mostly, so that cases get past the type check. */
const typedValue = (type: Type) =>
  fc.oneof(
    {
      weight: 9,
      arbitrary:
        type === 'boolean' ? fc.boolean() : type === 'string' ? fc.string() : type === 'integer' ? fc.integer() : json,
    },
    { weight: 1, arbitrary: json },
  )
const rule = (type: Type) =>
  fc.record(
    {
      attribute: maybe(fc.constantFrom('country', 'age', 'user_id')),
      operator: maybe(
        fc.constantFrom(
          'equals',
          'not_equals',
          'contains',
          'starts_with',
          'ends_with',
          'greater_than',
          'greater_than_or_equal',
          'less_than',
          'less_than_or_equal',
        ),
      ),
      values: maybe(fc.array(maybe(fc.oneof(fc.constantFrom('DE', '18', '1e3', ''), fc.string())), { minLength: 1 })),
      segment_key: maybe(fc.option(fc.string(), { freq: 9 })),
      variant: maybe(typedValue(type)),
    },
    { requiredKeys: ['attribute', 'operator', 'values'] },
  )
const flagOf = (type: Type) =>
  fc.record(
    {
      key: maybe(keys),
      is_enabled: maybe(
        fc.oneof({ weight: 4, arbitrary: fc.constant(true) }, { weight: 1, arbitrary: fc.constant(false) }),
      ),
      rollout_percentage: maybe(fc.option(fc.integer({ min: 0, max: 100 }))),
      rules: maybe(fc.array(maybe(rule(type)), { maxLength: 4 })),
      flag_type: maybe(fc.constant(type)),
      default_value: maybe(typedValue(type)),
      disabled_value: maybe(typedValue(type)),
      variants: maybe(
        fc.array(maybe(fc.record({ weight: maybe(fc.nat(10)), value: maybe(typedValue(type)) })), { maxLength: 4 }),
      ),
      prerequisites: maybe(
        fc.array(
          maybe(fc.record({ flag_key: maybe(keys), required_value: maybe(json) }, { requiredKeys: ['flag_key'] })),
          { maxLength: 3 },
        ),
      ),
    },
    { requiredKeys: ['key', 'is_enabled', 'flag_type'] },
  )
const flag = fc.oneof(flagOf('boolean'), flagOf('string'), flagOf('integer'), flagOf('json'))
const context = maybe(
  fc.record(
    {
      user_id: maybe(fc.oneof(fc.string(), fc.integer())),
      country: maybe(fc.constantFrom('DE', 'FR')),
      age: maybe(fc.oneof(fc.integer(), fc.string())),
    },
    { requiredKeys: ['user_id'] },
  ),
)

// Everything fast-check can build: BigInt, boxed values, null prototypes, getters-free exotic objects.
const hostile = fc.anything({
  withBigInt: true,
  withBoxedValues: true,
  withDate: true,
  withMap: true,
  withSet: true,
  withNullPrototype: true,
  withObjectString: true,
  withSparseArray: true,
  withTypedArray: true,
})

describe('evaluate never throws', () => {
  it('on anything as flag and context', () => {
    fc.assert(
      fc.property(hostile, hostile, (f, ctx) => {
        expectWellFormed(evaluate(f as EvaluableFlag, ctx as never))
      }),
      { numRuns: 1000 },
    )
  })

  it('on nearly valid flags, contexts and prerequisite stores, whose lookups may also throw', () => {
    fc.assert(
      fc.property(
        flag,
        context,
        fc.dictionary(
          keys,
          fc.oneof({ weight: 9, arbitrary: flag }, { weight: 1, arbitrary: fc.anything({ maxDepth: 1 }) }),
        ),
        fc.boolean(),
        (f, ctx, flags, throws) => {
          const getFlag: GetFlag = (key) => {
            if (throws && key === 'c') throw new Error('lookup failed')
            return flags[key] as EvaluableFlag | undefined
          }
          const result = evaluate(f as EvaluableFlag, ctx as never, getFlag)
          expectWellFormed(result)
          // Pure: the same inputs give the same result.
          expect(evaluate(f as EvaluableFlag, ctx as never, getFlag)).toEqual(result)
        },
      ),
      { numRuns: 1000 },
    )
  })
})

describe('bucketing properties', () => {
  const flagKey = fc.stringMatching(/^[A-Za-z0-9_-]{1,40}$/)

  it('is deterministic: a user gets the same answer every time', () => {
    fc.assert(
      fc.property(flagKey, fc.string(), fc.integer({ min: 1, max: 99 }), (key, userId, rollout) => {
        const f: EvaluableFlag = {
          key,
          is_enabled: true,
          rollout_percentage: rollout,
          flag_type: 'integer',
          variants: [
            { weight: 1, value: 1 },
            { weight: 1, value: 2 },
          ],
        }
        const first = evaluate(f, { user_id: userId === '' ? 'x' : userId })
        expect(evaluate(f, { user_id: userId === '' ? 'x' : userId })).toEqual(first)
      }),
    )
  })

  it("uses bucket()'s buckets for the rollout and the split, for any user id", () => {
    fc.assert(
      fc.property(
        flagKey,
        fc.string({ unit: 'binary', minLength: 1 }),
        fc.integer({ min: 1, max: 100 }),
        fc.array(fc.nat(5), { minLength: 1, maxLength: 5 }),
        (key, userId, rollout, weights) => {
          const f: EvaluableFlag = {
            key,
            is_enabled: true,
            rollout_percentage: rollout,
            flag_type: 'integer',
            default_value: -2,
            disabled_value: -1,
            variants: weights.map((weight, value) => ({ weight, value })),
          }
          const total = weights.reduce((sum, w) => sum + w, 0)
          let expected: EvaluationResult
          if (bucket(key, userId) >= rollout) expected = { value: -1, reason: 'SPLIT' }
          else if (total > 0) {
            const target = bucket(key, userId, VARIANT_SEED, total)
            let cumulative = 0
            const index = weights.findIndex((w) => {
              cumulative += w
              return target < cumulative
            })
            expected = { value: index, reason: 'SPLIT', variant: String(index) }
          } else expected = { value: -2, reason: rollout === 100 ? 'DEFAULT' : 'SPLIT' }
          expect(evaluate(f, { user_id: userId })).toEqual(expected)
        },
      ),
      { numRuns: 1000 },
    )
  })

  it('is uniform: a 30 % rollout takes 29 000 to 31 000 of 100 000 users, for any flag key', () => {
    fc.assert(
      fc.property(flagKey, (key) => {
        const f: EvaluableFlag = { key, is_enabled: true, rollout_percentage: 30 }
        let inside = 0
        for (let i = 0; i < 100_000; i++) if (evaluate(f, { user_id: `user-${i}` }).value === true) inside++
        expect(inside).toBeGreaterThanOrEqual(29_000)
        expect(inside).toBeLessThanOrEqual(31_000)
      }),
      { numRuns: 5 },
    )
  })

  it('follows the weights: 1:2:7 gives each variant its share ± 1 % of 100 000 users, for any flag key', () => {
    fc.assert(
      fc.property(flagKey, (key) => {
        const f: EvaluableFlag = {
          key,
          is_enabled: true,
          flag_type: 'string',
          variants: [
            { weight: 1, value: 'a' },
            { weight: 2, value: 'b' },
            { weight: 7, value: 'c' },
          ],
        }
        const counts = new Map<unknown, number>()
        for (let i = 0; i < 100_000; i++) {
          const v = evaluate(f, { user_id: `user-${i}` }).value
          counts.set(v, (counts.get(v) ?? 0) + 1)
        }
        expect(Math.abs((counts.get('a') ?? 0) - 10_000)).toBeLessThanOrEqual(1_000)
        expect(Math.abs((counts.get('b') ?? 0) - 20_000)).toBeLessThanOrEqual(1_000)
        expect(Math.abs((counts.get('c') ?? 0) - 70_000)).toBeLessThanOrEqual(1_000)
      }),
      { numRuns: 5 },
    )
  })
})
