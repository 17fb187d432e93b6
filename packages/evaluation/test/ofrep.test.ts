import {
  evaluate,
  ofrepBulk,
  ofrepBulkBody,
  ofrepBulkJson,
  ofrepBulkParts,
  ofrepBulkWrite,
  ofrepEtag,
  ofrepEvaluate,
  ofrepReadRequest,
  prepareFlags,
} from '@flagsync/evaluation'
import { type EvaluableFlag, ofrepEvaluationFailureSchema, ofrepEvaluationSuccessSchema } from '@flagsync/protocol'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'

const split: EvaluableFlag = {
  key: 'color',
  is_enabled: true,
  flag_type: 'string',
  default_value: 'grey',
  variants: [
    { value: 'red', weight: 50, name: 'warm' },
    { value: 'blue', weight: 50 },
  ],
  revision: 7,
} as EvaluableFlag
const plain: EvaluableFlag = { key: 'plain', is_enabled: true }
const targeted: EvaluableFlag = {
  key: 'beta',
  is_enabled: true,
  rules: [{ attribute: 'plan', operator: 'equals', values: ['pro'] }],
  default_value: false,
}
const gated: EvaluableFlag = { key: 'gated', is_enabled: true, prerequisites: [{ flag_key: 'beta' }] }

describe('ofrepReadRequest', () => {
  it('maps targetingKey to the bucketing user_id and keeps other attributes', () => {
    expect(ofrepReadRequest({ context: { targetingKey: 'u-1', plan: 'pro' } })).toEqual({
      ok: true,
      context: { plan: 'pro', user_id: 'u-1' },
    })
    expect(ofrepReadRequest({})).toEqual({ ok: true, context: {} })
  })

  it('refuses a body that is not an object as PARSE_ERROR and a bad context as INVALID_CONTEXT', () => {
    expect(ofrepReadRequest([1])).toMatchObject({ ok: false, errorCode: 'PARSE_ERROR' })
    expect(ofrepReadRequest('x')).toMatchObject({ ok: false, errorCode: 'PARSE_ERROR' })
    expect(ofrepReadRequest({ context: 'x' })).toMatchObject({ ok: false, errorCode: 'INVALID_CONTEXT' })
    expect(ofrepReadRequest({ context: { targetingKey: 4 } })).toMatchObject({
      ok: false,
      errorCode: 'INVALID_CONTEXT',
    })
  })
})

describe('ofrepEvaluate', () => {
  it('names the served variant (its name, else its value) and carries the flag revision', () => {
    const names = new Set<string | undefined>()
    for (let i = 0; i < 40; i++) {
      const outcome = ofrepEvaluate(split, 'color', { user_id: `u-${i}` })
      expect(outcome.ok).toBe(true)
      if (!outcome.ok) continue
      expect(outcome.body.reason).toBe('SPLIT')
      expect(outcome.body.metadata).toEqual({ revision: 7 })
      expect(outcome.body.variant).toBe(outcome.body.value === 'red' ? 'warm' : 'blue')
      names.add(outcome.body.variant)
    }
    expect(names).toEqual(new Set(['warm', 'blue']))
  })

  it('answers STATIC for a flag nothing can target, DEFAULT and TARGETING_MATCH for one with rules', () => {
    expect(ofrepEvaluate(plain, 'plain', {})).toEqual({
      ok: true,
      body: { key: 'plain', reason: 'STATIC', value: true, variant: 'true' },
    })
    expect(ofrepEvaluate(targeted, 'beta', { plan: 'free' }).body).toMatchObject({ reason: 'DEFAULT', value: false })
    expect(ofrepEvaluate(targeted, 'beta', { plan: 'pro' }).body).toMatchObject({
      reason: 'TARGETING_MATCH',
      value: false,
    })
    expect(ofrepEvaluate({ ...plain, is_enabled: false }, 'plain', {}).body).toMatchObject({
      reason: 'DISABLED',
      value: false,
    })
  })

  it('answers 404 FLAG_NOT_FOUND for no flag and 400 TARGETING_KEY_MISSING for a split without one', () => {
    expect(ofrepEvaluate(undefined, 'nope', {})).toMatchObject({
      ok: false,
      status: 404,
      body: { key: 'nope', errorCode: 'FLAG_NOT_FOUND' },
    })
    expect(ofrepEvaluate(split, 'color', {})).toMatchObject({
      ok: false,
      status: 400,
      body: { key: 'color', errorCode: 'TARGETING_KEY_MISSING' },
    })
  })

  it('evaluates prerequisites through the set in a bulk answer', () => {
    const flags = ofrepBulk([targeted, gated], { plan: 'pro' })
    expect(flags.find((f) => f.key === 'gated')).toMatchObject({ reason: 'DEFAULT', value: true })
    const off = ofrepBulk([{ ...targeted, is_enabled: false }, gated], { plan: 'pro' })
    expect(off.find((f) => f.key === 'gated')).toMatchObject({ reason: 'DISABLED', value: false })
  })
})

describe('ofrepEtag', () => {
  it('is the same for the same version and context in any key order, different otherwise', () => {
    expect(ofrepEtag('3', { a: 1, b: 2 })).toBe(ofrepEtag('3', { b: 2, a: 1 }))
    expect(ofrepEtag('3', { a: 1 })).not.toBe(ofrepEtag('4', { a: 1 }))
    expect(ofrepEtag('3', { a: 1 })).not.toBe(ofrepEtag('3', { a: 2 }))
    expect(ofrepEtag('3', {})).toMatch(/^"[^"]+"$/)
  })
})

// Flags of any shape, often well-formed enough to reach rules, rollouts and variants.
const flagArb = fc.oneof(
  fc.anything(),
  fc.record(
    {
      key: fc.constantFrom('a', 'b', 'c'),
      is_enabled: fc.boolean(),
      flag_type: fc.constantFrom('boolean', 'string', 'integer', 'json'),
      default_value: fc.jsonValue(),
      rollout_percentage: fc.integer({ min: 0, max: 100 }),
      variants: fc.array(fc.record({ value: fc.jsonValue(), weight: fc.nat(10), name: fc.string() }), {
        maxLength: 3,
      }),
      rules: fc.array(
        fc.record({ attribute: fc.string(), operator: fc.constant('equals'), values: fc.array(fc.string()) }),
      ),
      prerequisites: fc.array(fc.record({ flag_key: fc.constantFrom('a', 'b', 'c') }), { maxLength: 2 }),
      revision: fc.nat(),
    },
    { requiredKeys: ['key', 'is_enabled'] },
  ),
)
const contextArb = fc.dictionary(fc.constantFrom('user_id', 'plan', 'country'), fc.oneof(fc.string(), fc.integer()))

describe('ofrepEvaluate against evaluate', () => {
  it('never throws, answers a contract shape, and serves the value and reason evaluate gives', () => {
    fc.assert(
      fc.property(fc.array(flagArb, { maxLength: 4 }), contextArb, (flags, context) => {
        const set = flags as EvaluableFlag[]
        const byKey = new Map<string, EvaluableFlag>()
        for (const f of set) if (typeof (f as { key?: unknown })?.key === 'string') byKey.set(f.key, f)
        const getFlag = (k: string) => byKey.get(k)
        for (const answer of ofrepBulk(set, context)) {
          const expected = evaluate(byKey.get(answer.key) as EvaluableFlag, context, getFlag)
          if ('errorCode' in answer) {
            expect(ofrepEvaluationFailureSchema.safeParse(answer).success).toBe(true)
            expect(expected.reason).toBe('ERROR')
          } else {
            expect(ofrepEvaluationSuccessSchema.safeParse(answer).success).toBe(true)
            expect(answer.value).toEqual(expected.value)
            const reason = expected.reason === 'DEFAULT' ? ['DEFAULT', 'STATIC'] : [expected.reason]
            expect(reason).toContain(answer.reason)
          }
        }
      }),
      { numRuns: 300 },
    )
  })
})

/**
 * The bytes a server writes for `ofrepBulkParts`, as text; `ofrepBulkBody` between a head and a tail agrees, and
 * so does `ofrepBulkWrite` into memory just large enough, which refuses (-1) memory one byte short.
 */
const bulkText = (flags: readonly EvaluableFlag[], context: Record<string, unknown>) => {
  const text = Buffer.concat(ofrepBulkParts(flags, context)).toString('utf8')
  const body = ofrepBulkBody(flags, context, Buffer.from('{"flags":'), Buffer.from(',"é":1}'))
  expect(Buffer.from(body).toString('utf8')).toBe(`{"flags":${text},"é":1}`)
  const size = Buffer.byteLength(text)
  const memory = Buffer.alloc(2 + size)
  expect(ofrepBulkWrite(flags, context, memory, 2)).toBe(2 + size)
  expect(memory.subarray(2).toString('utf8')).toBe(text)
  expect(ofrepBulkWrite(flags, context, Buffer.alloc(1 + size), 2)).toBe(-1)
  return text
}

describe('ofrepBulkParts, ofrepBulkBody and ofrepBulkWrite against ofrepBulk', () => {
  it('answers byte for byte the JSON of ofrepBulk, for each context and each revision of the set', () => {
    fc.assert(
      fc.property(
        fc.array(fc.array(flagArb, { maxLength: 5 }), { minLength: 1, maxLength: 3 }),
        fc.array(contextArb, { minLength: 1, maxLength: 6 }),
        (revisions, contexts) => {
          // Each revision is a new array, as servers hand them out; contexts reuse the caches earlier ones filled.
          for (const flags of revisions) {
            const set = flags as EvaluableFlag[]
            for (const context of contexts) {
              expect(bulkText(set, context)).toBe(JSON.stringify(ofrepBulk(set, context)))
            }
          }
        },
      ),
      { numRuns: 300 },
    )
  })

  it('says whether the answer is ASCII, so a server may copy it as Latin-1', () => {
    const ascii = ofrepBulkJson([targeted, split], { plan: 'pro', user_id: 'u-1' })
    expect(ascii).toEqual({
      text: JSON.stringify(ofrepBulk([targeted, split], { plan: 'pro', user_id: 'u-1' })),
      ascii: true,
    })
    const set = [targeted, { ...targeted, key: 'grün', rules: [{ ...targeted.rules?.[0], variant: 'ja' }] }]
    expect(ofrepBulkJson(set, { plan: 'free' }).ascii).toBe(false)
    const later = [targeted, { ...split, variants: [{ value: 'rød', weight: 1 }] }]
    expect(ofrepBulkJson(later, {}).ascii).toBe(true) // no user id: the split answers an ASCII error
    expect(ofrepBulkJson(later, { user_id: 'u-1' })).toMatchObject({
      ascii: false,
      text: expect.stringContaining('rød'),
    })
  })

  it('serves a changed set from a new array, not the cached answers of the old one', () => {
    const before = [targeted, split]
    expect(JSON.parse(bulkText(before, { plan: 'pro', user_id: 'u-1' }))[0]).toMatchObject({
      reason: 'TARGETING_MATCH',
    })
    expect(prepareFlags(before)).toBe(prepareFlags(before))
    const after = [{ ...targeted, is_enabled: false }, split]
    expect(JSON.parse(bulkText(after, { plan: 'pro', user_id: 'u-1' }))[0]).toMatchObject({ reason: 'DISABLED' })
    expect(prepareFlags(after)).not.toBe(prepareFlags(before))
  })
})
