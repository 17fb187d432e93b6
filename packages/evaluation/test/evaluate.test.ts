import { bucket, type EvaluationResult, evaluate, type GetFlag, VARIANT_SEED } from '@flagsync/evaluation'
import type { EvaluableFlag, FlagInput, FullTargetingRule } from '@flagsync/protocol'
import { describe, expect, it } from 'vitest'

const store = (...flags: EvaluableFlag[]): GetFlag => {
  const byKey = new Map(flags.map((f) => [f.key, f]))
  return (key) => byKey.get(key)
}

/** The first `count` ids of the form `user-<n>` that satisfy `pred`. */
function users(pred: (id: string) => boolean, count = 3): string[] {
  const found: string[] = []
  for (let i = 0; found.length < count; i++) if (pred(`user-${i}`)) found.push(`user-${i}`)
  return found
}

const on = (over: Partial<EvaluableFlag> = {}): EvaluableFlag => ({ key: 'f', is_enabled: true, ...over })

describe('master switch', () => {
  it('serves the disabled value with reason DISABLED, whatever else the flag says', () => {
    const flag = on({
      is_enabled: false,
      rules: [{ attribute: 'country', operator: 'equals', values: ['DE'] }],
      prerequisites: [{ flag_key: 'missing' }],
    })
    expect(evaluate(flag, { user_id: 'u', country: 'DE' })).toEqual({ value: false, reason: 'DISABLED' })
  })

  it('evaluates a flat API flag: on is true, off is false', () => {
    const flat: FlagInput = { key: 'flat', is_enabled: true, rollout_percentage: null, description: null, rules: [] }
    expect(evaluate(flat, {})).toEqual({ value: true, reason: 'DEFAULT' })
    expect(evaluate({ ...flat, is_enabled: false }, {})).toEqual({ value: false, reason: 'DISABLED' })
  })
})

describe('rollout', () => {
  it.each([null, undefined, 100])('%s means everyone: DEFAULT, no user id needed', (rollout) => {
    expect(evaluate(on({ rollout_percentage: rollout }), {})).toEqual({ value: true, reason: 'DEFAULT' })
  })

  it('0 means nobody: the disabled value by SPLIT, no user id needed', () => {
    expect(evaluate(on({ rollout_percentage: 0 }), {})).toEqual({ value: false, reason: 'SPLIT' })
    expect(evaluate(on({ rollout_percentage: 0 }), { user_id: 'u' })).toEqual({ value: false, reason: 'SPLIT' })
  })

  it('puts a user inside exactly when bucket(flagKey, userId) < rollout', () => {
    const flag = on({ key: 'checkout', rollout_percentage: 30 })
    for (const id of users((u) => bucket('checkout', u) < 30)) {
      expect(evaluate(flag, { user_id: id })).toEqual({ value: true, reason: 'SPLIT' })
    }
    for (const id of users((u) => bucket('checkout', u) >= 30)) {
      expect(evaluate(flag, { user_id: id })).toEqual({ value: false, reason: 'SPLIT' })
    }
    // The boundary: bucket 29 is inside a 30 % rollout and outside a 29 % one.
    const [edge = ''] = users((u) => bucket('checkout', u) === 29, 1)
    expect(evaluate(flag, { user_id: edge }).value).toBe(true)
    expect(evaluate(on({ key: 'checkout', rollout_percentage: 29 }), { user_id: edge }).value).toBe(false)
  })

  it('treats a numeric user id as its string form', () => {
    const flag = on({ key: 'checkout', rollout_percentage: 50 })
    for (let n = 0; n < 50; n++) expect(evaluate(flag, { user_id: n })).toEqual(evaluate(flag, { user_id: String(n) }))
  })

  it('needs a user id: without one it is TARGETING_KEY_MISSING and the caller falls back', () => {
    for (const context of [{}, { user_id: '' }, { user_id: null }, { user_id: { id: 1 } }]) {
      const result = evaluate(on({ rollout_percentage: 50 }), context)
      expect(result).toMatchObject({ value: undefined, reason: 'ERROR', errorCode: 'TARGETING_KEY_MISSING' })
      expect(result.errorMessage).toContain('user_id')
    }
  })

  it('lands a 30 % rollout on 30 % ± 1 % of 100 000 users', () => {
    const flag = on({ key: 'gradual', rollout_percentage: 30 })
    let inside = 0
    for (let i = 0; i < 100_000; i++) if (evaluate(flag, { user_id: `u${i}` }).value === true) inside++
    expect(inside).toBeGreaterThanOrEqual(29_000)
    expect(inside).toBeLessThanOrEqual(31_000)
  })
})

describe('rules', () => {
  const country: FullTargetingRule = { attribute: 'country', operator: 'equals', values: ['DE', 'AT'] }
  const email: FullTargetingRule = { attribute: 'email', operator: 'ends_with', values: ['@corp.example'] }

  it('the first matching rule wins and serves its variant (TARGETING_MATCH)', () => {
    const flag = on({
      flag_type: 'string',
      default_value: 'default',
      rules: [
        { ...email, variant: 'staff' },
        { ...country, variant: 'dach' },
      ],
    })
    expect(evaluate(flag, { email: 'a@corp.example', country: 'DE' })).toEqual({
      value: 'staff',
      reason: 'TARGETING_MATCH',
    })
    expect(evaluate(flag, { email: 'a@mail.example', country: 'AT' })).toEqual({
      value: 'dach',
      reason: 'TARGETING_MATCH',
    })
    expect(evaluate(flag, { email: 'a@mail.example', country: 'FR' })).toEqual({ value: 'default', reason: 'DEFAULT' })
  })

  it('a rule without a variant serves the default value', () => {
    const flag = on({ flag_type: 'string', default_value: 'default', rules: [country] })
    expect(evaluate(flag, { country: 'DE' })).toEqual({ value: 'default', reason: 'TARGETING_MATCH' })
    expect(evaluate(on({ rules: [country] }), { country: 'DE' })).toEqual({ value: true, reason: 'TARGETING_MATCH' })
  })

  it('a match bypasses the rollout and needs no user id', () => {
    const flag = on({ rollout_percentage: 0, rules: [country] })
    expect(evaluate(flag, { country: 'DE' })).toEqual({ value: true, reason: 'TARGETING_MATCH' })
    expect(evaluate(on({ rollout_percentage: 50, rules: [country] }), { country: 'DE' }).reason).toBe('TARGETING_MATCH')
  })

  it('a boolean rule variant of false excludes the matched users', () => {
    const flag = on({ rules: [{ ...country, variant: false }] })
    expect(evaluate(flag, { country: 'DE' })).toEqual({ value: false, reason: 'TARGETING_MATCH' })
    expect(evaluate(flag, { country: 'FR' })).toEqual({ value: true, reason: 'DEFAULT' })
  })

  it('a rule before the variants wins over the split', () => {
    const flag = on({
      flag_type: 'string',
      rules: [{ ...country, variant: 'pinned' }],
      variants: [{ weight: 1, value: 'x' }],
    })
    expect(evaluate(flag, { user_id: 'u', country: 'DE' })).toEqual({ value: 'pinned', reason: 'TARGETING_MATCH' })
  })

  it('skips rules that cannot match (unexpanded segment, unknown operator) and goes on', () => {
    const flag = on({
      flag_type: 'string',
      default_value: 'default',
      rules: [
        { segment_key: 'beta', variant: 'segment' },
        { attribute: 'country', operator: 'near' as never, values: ['DE'], variant: 'future' },
        { ...country, variant: 'dach' },
      ],
    })
    expect(evaluate(flag, { country: 'DE' })).toEqual({ value: 'dach', reason: 'TARGETING_MATCH' })
  })
})

describe('typed values', () => {
  it.each<[string, EvaluableFlag, unknown, unknown]>([
    ['string', on({ flag_type: 'string', default_value: 'on', disabled_value: 'off' }), 'on', 'off'],
    ['integer', on({ flag_type: 'integer', default_value: 10, disabled_value: 0 }), 10, 0],
    ['json', on({ flag_type: 'json', default_value: { a: [1] }, disabled_value: null }), { a: [1] }, null],
    ['boolean with explicit values', on({ default_value: false, disabled_value: true }), false, true],
  ])('%s flag serves its default and disabled values', (_type, flag, onValue, offValue) => {
    expect(evaluate(flag, {})).toEqual({ value: onValue, reason: 'DEFAULT' })
    expect(evaluate({ ...flag, is_enabled: false }, {})).toEqual({ value: offValue, reason: 'DISABLED' })
  })

  it('a non-boolean flag without default or disabled value serves undefined, so the caller falls back', () => {
    const flag = on({ flag_type: 'string' })
    const getValue = (result: EvaluationResult, fallback: string) =>
      result.value === undefined ? fallback : result.value
    expect(evaluate(flag, {})).toEqual({ value: undefined, reason: 'DEFAULT' })
    expect(evaluate({ ...flag, is_enabled: false }, {})).toEqual({ value: undefined, reason: 'DISABLED' })
    expect(getValue(evaluate(flag, {}), 'fallback')).toBe('fallback')
    expect(getValue(evaluate({ ...flag, default_value: 'set' }, {}), 'fallback')).toBe('set')
  })

  it.each<[string, EvaluableFlag]>([
    ['a string flag serving a number', on({ flag_type: 'string', default_value: 5 })],
    ['an integer flag serving a fraction', on({ flag_type: 'integer', default_value: 1.5 })],
    ['an integer flag serving a numeric string', on({ flag_type: 'integer', default_value: '1' })],
    ['an integer flag serving an unsafe integer', on({ flag_type: 'integer', default_value: 2 ** 60 })],
    ['a boolean flag serving a string', on({ default_value: 'true' })],
    ['a string flag serving null', on({ flag_type: 'string', default_value: null })],
  ])('%s is a TYPE_MISMATCH error', (_name, flag) => {
    expect(evaluate(flag, {})).toMatchObject({ value: undefined, reason: 'ERROR', errorCode: 'TYPE_MISMATCH' })
  })

  it('names the type and what would have been served', () => {
    expect(evaluate(on({ flag_type: 'integer', default_value: 1.5 }), {}).errorMessage).toBe(
      'flag "f" is of type integer but would serve a non-integer number',
    )
    expect(evaluate(on({ flag_type: 'string', default_value: [1] }), {}).errorMessage).toBe(
      'flag "f" is of type string but would serve an array',
    )
  })

  it('checks the value actually served, not the others', () => {
    const flag = on({ flag_type: 'integer', default_value: 3, disabled_value: 'broken' })
    expect(evaluate(flag, {})).toEqual({ value: 3, reason: 'DEFAULT' })
    expect(evaluate({ ...flag, is_enabled: false }, {}).errorCode).toBe('TYPE_MISMATCH')
  })
})

describe('weighted variants', () => {
  const variants = [
    { weight: 1, value: 'a' },
    { weight: 2, value: 'b' },
    { weight: 7, value: 'c' },
  ]
  const split = on({ key: 'split', flag_type: 'string', default_value: 'control', variants })

  it('serves the variant that owns the user bucket, by SPLIT, with its index', () => {
    for (const id of users(() => true, 20)) {
      const target = bucket('split', id, VARIANT_SEED, 10)
      const index = target < 1 ? 0 : target < 3 ? 1 : 2
      expect(evaluate(split, { user_id: id })).toEqual({
        value: variants[index]?.value,
        reason: 'SPLIT',
        variant: String(index),
      })
    }
  })

  it('normalizes weights by their total: 1:2:7 gives 10 %, 20 %, 70 % ± 1 % of 100 000 users', () => {
    const counts: Record<string, number> = { a: 0, b: 0, c: 0 }
    for (let i = 0; i < 100_000; i++) {
      const value = evaluate(split, { user_id: `id-${i}` }).value as string
      counts[value] = (counts[value] ?? 0) + 1
    }
    expect(Math.abs((counts.a ?? 0) - 10_000)).toBeLessThanOrEqual(1_000)
    expect(Math.abs((counts.b ?? 0) - 20_000)).toBeLessThanOrEqual(1_000)
    expect(Math.abs((counts.c ?? 0) - 70_000)).toBeLessThanOrEqual(1_000)
  })

  it('never serves a weight-0 variant; its index still counts', () => {
    const flag = on({
      key: 'w0',
      flag_type: 'string',
      variants: [
        { weight: 0, value: 'never' },
        { weight: 3, value: 'x' },
        { weight: 0, value: 'never' },
        { weight: 1, value: 'y' },
      ],
    })
    const seen = new Set<string | undefined>()
    for (let i = 0; i < 2_000; i++) {
      const result = evaluate(flag, { user_id: `u${i}` })
      expect(result.value).not.toBe('never')
      seen.add(result.variant)
    }
    expect([...seen].sort()).toEqual(['1', '3'])
  })

  it('with all weights 0 there is no split: the default value, and no user id needed', () => {
    const flag = on({
      flag_type: 'string',
      default_value: 'control',
      variants: [
        { weight: 0, value: 'a' },
        { weight: 0, value: 'b' },
      ],
    })
    expect(evaluate(flag, {})).toEqual({ value: 'control', reason: 'DEFAULT' })
  })

  it('needs a user id when there is a split', () => {
    expect(evaluate(split, {})).toMatchObject({ value: undefined, reason: 'ERROR', errorCode: 'TARGETING_KEY_MISSING' })
  })

  it('applies only inside the rollout; outside serves the disabled value', () => {
    const flag = { ...split, rollout_percentage: 40, disabled_value: 'off' }
    for (const id of users((u) => bucket('split', u) >= 40))
      expect(evaluate(flag, { user_id: id })).toEqual({ value: 'off', reason: 'SPLIT' })
    for (const id of users((u) => bucket('split', u) < 40))
      expect(evaluate(flag, { user_id: id }).variant).toBeDefined()
  })

  it('splits the users inside a rollout by the weights too (the variant seed differs from the rollout seed)', () => {
    // With one seed, everyone inside a 10 % rollout would have a bucket below 10 and land in the first half.
    const flag = on({
      key: 'seeded',
      flag_type: 'string',
      rollout_percentage: 10,
      variants: [
        { weight: 50, value: 'left' },
        { weight: 50, value: 'right' },
      ],
    })
    const counts = { left: 0, right: 0, off: 0 }
    for (let i = 0; i < 20_000; i++) {
      const value = evaluate(flag, { user_id: `s${i}` }).value
      if (value === 'left') counts.left++
      else if (value === 'right') counts.right++
      else counts.off++
    }
    const inside = counts.left + counts.right
    expect(Math.abs(counts.left / inside - 0.5)).toBeLessThan(0.05)
  })
})

describe('prerequisites', () => {
  const parent = on({ key: 'parent' })
  const child = on({
    key: 'child',
    flag_type: 'string',
    default_value: 'on',
    disabled_value: 'off',
    prerequisites: [{ flag_key: 'parent' }],
  })

  it('without required_value the prerequisite has to be on for this context', () => {
    expect(evaluate(child, {}, store(parent))).toEqual({ value: 'on', reason: 'DEFAULT' })
    expect(evaluate(child, {}, store({ ...parent, is_enabled: false }))).toEqual({ value: 'off', reason: 'DISABLED' })
    // On by a rule, even one serving false: "on" is about the path taken, not the value.
    const ruled = {
      ...parent,
      rollout_percentage: 0,
      rules: [{ attribute: 'tier', operator: 'equals' as const, values: ['gold'], variant: false }],
    }
    expect(evaluate(child, { tier: 'gold' }, store(ruled)).value).toBe('on')
    expect(evaluate(child, { tier: 'silver' }, store(ruled)).value).toBe('off')
  })

  it('a prerequisite outside its own rollout for this user is not on', () => {
    const partial = { ...parent, rollout_percentage: 50 }
    const [inside = ''] = users((u) => bucket('parent', u) < 50, 1)
    const [outside = ''] = users((u) => bucket('parent', u) >= 50, 1)
    expect(evaluate(child, { user_id: inside }, store(partial)).value).toBe('on')
    expect(evaluate(child, { user_id: outside }, store(partial))).toEqual({ value: 'off', reason: 'DISABLED' })
  })

  it('with required_value the prerequisite has to resolve to that value, whatever the reason', () => {
    const color = on({ key: 'color', flag_type: 'string', default_value: 'blue', disabled_value: 'grey' })
    const needsBlue = { ...child, prerequisites: [{ flag_key: 'color', required_value: 'blue' }] }
    expect(evaluate(needsBlue, {}, store(color)).value).toBe('on')
    expect(evaluate(needsBlue, {}, store({ ...color, default_value: 'red' })).value).toBe('off')
    // required_value false is satisfied by a prerequisite that is switched off.
    const needsOff = { ...child, prerequisites: [{ flag_key: 'parent', required_value: false }] }
    expect(evaluate(needsOff, {}, store({ ...parent, is_enabled: false })).value).toBe('on')
    expect(evaluate(needsOff, {}, store(parent)).value).toBe('off')
    // JSON values compare structurally.
    const config = on({ key: 'config', flag_type: 'json', default_value: { a: [1, { b: null }] } })
    const needsConfig = { ...child, prerequisites: [{ flag_key: 'config', required_value: { a: [1, { b: null }] } }] }
    expect(evaluate(needsConfig, {}, store(config)).value).toBe('on')
    expect(evaluate(needsConfig, {}, store({ ...config, default_value: { a: [1, { b: 0 }] } })).value).toBe('off')
  })

  it('all prerequisites must hold', () => {
    const two = { ...child, prerequisites: [{ flag_key: 'parent' }, { flag_key: 'other' }] }
    expect(evaluate(two, {}, store(parent, on({ key: 'other' }))).value).toBe('on')
    expect(evaluate(two, {}, store(parent, on({ key: 'other', is_enabled: false }))).value).toBe('off')
  })

  it('a missing prerequisite, or no getFlag at all, fails it', () => {
    expect(evaluate(child, {}, store())).toEqual({ value: 'off', reason: 'DISABLED' })
    expect(evaluate(child, {})).toEqual({ value: 'off', reason: 'DISABLED' })
  })

  it('a getFlag that answers with another flag counts as missing', () => {
    expect(evaluate(child, {}, () => on({ key: 'impostor' }))).toEqual({ value: 'off', reason: 'DISABLED' })
  })

  it('an unreadable prerequisite entry fails it', () => {
    for (const entry of [null, 'parent', {}, { flag_key: 7 }]) {
      expect(evaluate({ ...child, prerequisites: [entry as never] }, {}, store(parent)).value).toBe('off')
    }
  })

  it('a cycle serves the disabled result for every flag on it, whatever the required values', () => {
    const a = on({ key: 'a', prerequisites: [{ flag_key: 'b' }] })
    const b = on({ key: 'b', prerequisites: [{ flag_key: 'a', required_value: false }] })
    const flags = store(a, b)
    expect(evaluate(a, {}, flags)).toEqual({ value: false, reason: 'DISABLED' })
    expect(evaluate(b, {}, flags)).toEqual({ value: false, reason: 'DISABLED' })
    const x = on({ key: 'x', prerequisites: [{ flag_key: 'a', required_value: false }] })
    expect(evaluate(x, {}, store(x, a, b))).toEqual({ value: false, reason: 'DISABLED' })
  })

  it('a self-cycle serves the disabled result', () => {
    const self = on({ key: 'self', prerequisites: [{ flag_key: 'self' }] })
    expect(evaluate(self, {}, store(self))).toEqual({ value: false, reason: 'DISABLED' })
  })

  it('a diamond is not a cycle', () => {
    const top = on({ key: 'top', prerequisites: [{ flag_key: 'l' }, { flag_key: 'r' }] })
    const l = on({ key: 'l', prerequisites: [{ flag_key: 'base' }] })
    const r = on({ key: 'r', prerequisites: [{ flag_key: 'base' }] })
    expect(evaluate(top, {}, store(top, l, r, on({ key: 'base' })))).toEqual({ value: true, reason: 'DEFAULT' })
  })

  it('follows a deep chain, and its last link decides', () => {
    const chain = Array.from({ length: 200 }, (_, i) =>
      on({ key: `c${i}`, prerequisites: i < 199 ? [{ flag_key: `c${i + 1}` }] : [] }),
    )
    expect(evaluate(chain[0] as EvaluableFlag, {}, store(...chain))).toEqual({ value: true, reason: 'DEFAULT' })
    chain[199] = on({ key: 'c199', is_enabled: false })
    expect(evaluate(chain[0] as EvaluableFlag, {}, store(...chain))).toEqual({ value: false, reason: 'DISABLED' })
  })

  it('an error inside a prerequisite is the error of the flag', () => {
    expect(evaluate(child, {}, store({ ...parent, rules: 'x' as never }))).toMatchObject({
      reason: 'ERROR',
      errorCode: 'PARSE_ERROR',
    })
    expect(evaluate(child, {}, store({ ...parent, rollout_percentage: 50 }))).toMatchObject({
      reason: 'ERROR',
      errorCode: 'TARGETING_KEY_MISSING',
    })
    const thrown = evaluate(child, {}, () => {
      throw new Error('store offline')
    })
    expect(thrown).toEqual({ value: undefined, reason: 'ERROR', errorCode: 'GENERAL', errorMessage: 'store offline' })
  })
})

describe('errors', () => {
  it.each<[string, unknown]>([
    ['null', null],
    ['a string', 'flag'],
    ['an array', []],
    ['a flag without key', { is_enabled: true }],
    ['is_enabled as a string', { key: 'f', is_enabled: 'true' }],
    ['rollout above 100', { key: 'f', is_enabled: true, rollout_percentage: 101 }],
    ['negative rollout', { key: 'f', is_enabled: true, rollout_percentage: -1 }],
    ['fractional rollout', { key: 'f', is_enabled: true, rollout_percentage: 12.5 }],
    ['rollout as a string', { key: 'f', is_enabled: true, rollout_percentage: '50' }],
    ['rules as an object', { key: 'f', is_enabled: true, rules: {} }],
    ['variants as a string', { key: 'f', is_enabled: true, variants: 'a' }],
    ['prerequisites as a number', { key: 'f', is_enabled: true, prerequisites: 1 }],
    ['an unknown flag_type', { key: 'f', is_enabled: true, flag_type: 'float' }],
  ])('a flag that is %s is a PARSE_ERROR for every context', (_name, flag) => {
    for (const context of [{}, { user_id: 'u' }]) {
      const result = evaluate(flag as EvaluableFlag, context)
      expect(result).toMatchObject({ value: undefined, reason: 'ERROR', errorCode: 'PARSE_ERROR' })
      expect(result.errorMessage).toEqual(expect.any(String))
    }
  })

  it('checks the shape even of a disabled flag', () => {
    expect(evaluate({ key: 'f', is_enabled: false, rules: 'x' } as never, {}).errorCode).toBe('PARSE_ERROR')
  })

  it('names the flag and the field', () => {
    expect(evaluate({ key: 'broken', is_enabled: true, rules: 5 } as never, {}).errorMessage).toBe(
      'flag "broken": rules must be an array',
    )
  })

  it('treats null optional fields as absent', () => {
    const flag = { key: 'f', is_enabled: true, rules: null, variants: null, prerequisites: null, flag_type: null }
    expect(evaluate(flag as never, {})).toEqual({ value: true, reason: 'DEFAULT' })
  })

  it('a context that is not an object is INVALID_CONTEXT; an absent one is empty', () => {
    expect(evaluate(on(), 'u-1' as never)).toMatchObject({ reason: 'ERROR', errorCode: 'INVALID_CONTEXT' })
    expect(evaluate(on(), null)).toEqual({ value: true, reason: 'DEFAULT' })
    expect(evaluate(on())).toEqual({ value: true, reason: 'DEFAULT' })
  })

  it('a throwing context getter is a GENERAL error, not an exception', () => {
    const context = Object.defineProperty({}, 'country', {
      get() {
        throw new TypeError('no country')
      },
      enumerable: true,
    })
    const flag = on({ rules: [{ attribute: 'country', operator: 'equals', values: ['DE'] }] })
    expect(evaluate(flag, context)).toMatchObject({ reason: 'ERROR', errorCode: 'GENERAL', errorMessage: 'no country' })
  })
})
