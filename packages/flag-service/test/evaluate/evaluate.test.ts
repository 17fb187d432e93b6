import { createFlagClient, type FlagClient } from '@flagsync/sync-client'
import { DIALECTS } from '@flagsync/test-support/databases'
import { DECISION_FLAGS as FLAGS, STAFF_CONDITIONS as STAFF } from '@flagsync/test-support/decision-flags'
import fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createProject, member, type Project, putFlag } from '../flags/support.js'
import { type Harness, startHarness } from '../harness.js'

const contextArb = fc.record(
  {
    user_id: fc.oneof(fc.string({ minLength: 1, maxLength: 8 }), fc.integer({ min: 0, max: 10_000 })),
    country: fc.constantFrom('NL', 'DE', 'FR', 'US'),
    plan: fc.constantFrom('free', 'pro', 'team'),
    age: fc.oneof(fc.integer({ min: 0, max: 99 }), fc.constantFrom('17', 'forty')),
    email: fc.constantFrom('ann@acme.test', 'ops.bo@else.test', 'beta-cy@else.test', 'dee@else.test'),
  },
  { requiredKeys: [] },
)

interface Entry {
  key: string
  value: unknown
  variant: string | null
  reason: string
  rule_index?: number
  bucket?: number
  error?: string
}

describe.each(DIALECTS)('POST /api/environments/:env_id/evaluate on %s', (dialect) => {
  let h: Harness
  let p: Project
  let client: FlagClient
  const evaluate = async (body: unknown, as = h.admin) =>
    h.call(`/api/environments/${p.production}/evaluate`, { method: 'POST', as, body })

  beforeAll(async () => {
    h = await startHarness(dialect)
    p = await createProject(h)
    const seg = await h.call(`/api/projects/${p.id}/segments`, {
      method: 'POST',
      as: h.admin,
      body: { key: 'staff', name: 'Staff', rules: STAFF },
    })
    expect(seg.status).toBe(200)
    for (const flag of FLAGS) await putFlag(h, p.production, flag)
    client = createFlagClient({ persist: false, streamUrl: `${h.url}/stream`, sdkKey: p.sdkKey })
    await client.ready()
  })
  afterAll(async () => {
    await client?.close()
    await h?.dispose()
  })

  it('answers 100 random contexts exactly as the flag client evaluates them', async () => {
    const contexts = fc.sample(contextArb, { numRuns: 100, seed: 20261128 })
    const reasons = new Set<string>()
    for (const context of contexts) {
      const res = await evaluate({ context })
      expect(res.status).toBe(200)
      const flags = res.body.flags as Entry[]
      expect(flags.map((f) => f.key)).toEqual(client.allFlags().map((f) => f.key))
      for (const entry of flags) {
        const local = client.evaluate(entry.key, context)
        reasons.add(entry.reason)
        expect({ key: entry.key, value: entry.value, variant: entry.variant, reason: entry.reason }).toEqual({
          key: entry.key,
          value: local.value ?? null,
          variant: local.variant ?? null,
          reason: local.reason,
        })
        expect(entry.error ?? null).toBe(local.errorCode ?? null)
        expect(entry.rule_index !== undefined).toBe(local.reason === 'TARGETING_MATCH')
        expect(entry.bucket !== undefined).toBe(local.reason === 'SPLIT')
      }
    }
    // The sample reached every kind of decision.
    expect([...reasons].sort()).toEqual(['DEFAULT', 'DISABLED', 'ERROR', 'SPLIT', 'TARGETING_MATCH'])
  })

  it('names the deciding rule (segments expanded) and the rollout bucket', async () => {
    const res = await evaluate({
      context: { user_id: 'u-1', country: 'FR', plan: 'free', email: 'ops.x@else.test', age: 70 },
      keys: ['theme', 'gate', 'limit', 'retired'],
    })
    expect(res.status).toBe(200)
    const [theme, gate, limit, retired] = res.body.flags as Entry[]
    // Rule 1 (the staff segment) expands to two conditions: the second one matched, at index 2.
    expect(theme).toEqual({
      key: 'theme',
      value: 'staff',
      variant: null,
      reason: 'TARGETING_MATCH',
      rule_index: 2,
      rule: { attribute: 'email', operator: 'starts_with', values: ['ops.'], index: 1, segment_key: 'staff' },
    })
    // After the segment's two conditions, the saved rule 3 is the expanded rule 4: named as the editor numbers it.
    const plan = await evaluate({ context: { user_id: 'u-1', plan: 'pro', email: 'x@else.test' }, keys: ['theme'] })
    expect(plan.body.flags[0]).toMatchObject({
      value: 'paid',
      rule_index: 3,
      rule: { attribute: 'plan', operator: 'not_equals', values: ['free'], index: 2 },
    })
    expect(plan.body.flags[0].rule.segment_key).toBeUndefined()
    expect(gate).toMatchObject({ key: 'gate', reason: 'SPLIT' })
    expect(gate?.bucket).toBeTypeOf('number')
    expect(gate?.value).toBe((gate?.bucket as number) < 50)
    expect(limit).toEqual({ key: 'limit', value: 0, variant: null, reason: 'DISABLED' })
    expect(retired).toEqual({ key: 'retired', value: false, variant: null, reason: 'DISABLED' })
  })

  it('evaluates an unsaved flag in place of the saved one, segments expanded, and saves nothing', async () => {
    const context = { user_id: 'u-1', country: 'FR', plan: 'free', email: 'ann@acme.test', age: 70 }
    const before = await h.call(`/api/environments/${p.production}/flags/theme`, { as: h.admin })
    const draft = {
      key: 'theme',
      is_enabled: true,
      flag_type: 'string',
      default_value: 'light',
      rules: [
        { attribute: 'country', operator: 'equals', values: ['FR'], variant: 'bleu' },
        { segment_key: 'staff', variant: 'staff' },
      ],
    }
    const now = await evaluate({ context, keys: ['theme', 'limit'] })
    const res = await evaluate({ context, keys: ['theme', 'limit'], flags: [draft] })
    expect(res.status).toBe(200)
    expect(now.body.flags[0]).toMatchObject({ value: 'staff', rule_index: 1 })
    expect(res.body.flags).toEqual([
      {
        key: 'theme',
        value: 'bleu',
        variant: null,
        reason: 'TARGETING_MATCH',
        rule_index: 0,
        rule: { attribute: 'country', operator: 'equals', values: ['FR'], index: 0 },
      },
      // `limit` requires theme = dark: it reads the draft, as it would once saved.
      { key: 'limit', value: 0, variant: null, reason: 'DISABLED' },
    ])
    const staff = await evaluate({ context: { ...context, country: 'NL' }, keys: ['theme'], flags: [draft] })
    expect(staff.body.flags[0]).toMatchObject({
      value: 'staff',
      rule_index: 1,
      rule: { attribute: 'email', index: 1, segment_key: 'staff' },
    })
    // The saved flag is as it was (its evaluation times may move: the flag client reports what it evaluates).
    const after = await h.call(`/api/environments/${p.production}/flags/theme`, { as: h.admin })
    const definition = (flag: Record<string, unknown>) => ({ ...flag, last_evaluated_at: undefined, stale: undefined })
    expect(definition(after.body)).toEqual(definition(before.body))
  })

  it('refuses an unsaved flag that could not be saved with a 422 naming its field', async () => {
    const bad = { key: 'theme', is_enabled: true, flag_type: 'string', default_value: 3 }
    const res = await evaluate({ context: {}, flags: [bad] })
    expect(res.status).toBe(422)
    expect(res.body).toMatchObject({ code: 'validation_failed' })
    expect(res.body.issues[0].path).toBe('flags[0].default_value')
  })

  it('takes a flag read sent back as is, as a save does: its revision and lifecycle fields are not the definition', async () => {
    const read = await h.call(`/api/environments/${p.production}/flags/retired`, { as: h.admin })
    expect(read.body).toHaveProperty('revision')
    expect(read.body).toHaveProperty('stale')
    const res = await evaluate({
      context: { country: 'DE' },
      keys: ['retired'],
      flags: [{ ...read.body, is_enabled: true }],
    })
    expect(res.status, JSON.stringify(res.body)).toBe(200)
    expect(res.body.flags).toEqual([
      {
        key: 'retired',
        value: true,
        variant: null,
        reason: 'TARGETING_MATCH',
        rule_index: 0,
        rule: { attribute: 'country', operator: 'equals', values: ['DE'], index: 0 },
      },
    ])
  })

  it('refuses unsaved flags that saving would refuse here: unknown segments and prerequisites, a key twice', async () => {
    const cases: Array<[unknown[], string]> = [
      [[{ key: 'theme', is_enabled: true, rules: [{ segment_key: 'nobody' }] }], 'flags[0].rules[0].segment_key'],
      [
        [{ key: 'fresh', is_enabled: true, prerequisites: [{ flag_key: 'missing' }] }],
        'flags[0].prerequisites[0].flag_key',
      ],
      [
        [
          { key: 'gate', is_enabled: true },
          { key: 'gate', is_enabled: false },
        ],
        'flags[1].key',
      ],
    ]
    for (const [flags, path] of cases) {
      const res = await evaluate({ context: {}, flags })
      expect([res.status, res.body.code, res.body.issues?.[0]?.path], path).toEqual([422, 'validation_failed', path])
    }
    // A prerequisite on another unsaved flag of the same call is there to be evaluated.
    const pair = [
      { key: 'fresh-gate', is_enabled: true },
      { key: 'fresh', is_enabled: true, prerequisites: [{ flag_key: 'fresh-gate' }] },
    ]
    const res = await evaluate({ context: {}, keys: ['fresh'], flags: pair })
    expect([res.status, res.body.flags]).toEqual([
      200,
      [{ key: 'fresh', value: true, variant: null, reason: 'DEFAULT' }],
    ])
  })

  it('answers an unknown key with FLAG_NOT_FOUND and a split without user_id with its error', async () => {
    const res = await evaluate({ context: { country: 'DE' }, keys: ['nope', 'gate'] })
    expect(res.status).toBe(200)
    expect(res.body.flags).toEqual([
      { key: 'nope', value: null, variant: null, reason: 'ERROR', error: 'FLAG_NOT_FOUND' },
      { key: 'gate', value: null, variant: null, reason: 'ERROR', error: 'TARGETING_KEY_MISSING' },
    ])
  })

  it('refuses a bad context with a 422 naming the field', async () => {
    const deep = { a: { b: { c: { d: { e: 1 } } } } }
    for (const context of [[], 'u-1', null, deep, { big: 'x'.repeat(20_000) }]) {
      const res = await evaluate({ context })
      expect(res.status, JSON.stringify(context).slice(0, 40)).toBe(422)
      expect(res.body).toMatchObject({ code: 'validation_failed' })
      expect(res.body.issues[0].path).toBe('context')
    }
    const missing = await evaluate({ keys: ['gate'] })
    expect(missing.status).toBe(422)
    expect(missing.body.issues[0].path).toBe('context')
    const keys = await evaluate({ context: {}, keys: 'gate' })
    expect(keys.status).toBe(422)
    expect(keys.body.issues[0].path).toBe('keys')
  })

  it('is for viewers and above and server keys, not client keys or strangers', async () => {
    const viewer = await member(h, p.id, 'editor', 'viewer')
    expect((await evaluate({ context: { user_id: 'u' } }, viewer.as)).status).toBe(200)
    expect((await evaluate({ context: {} }, { kind: 'bearer', secret: p.sdkKey })).status).toBe(200)
    const outsider = await member(h, undefined, 'editor')
    expect((await evaluate({ context: {} }, outsider.as)).status).toBe(404)
    const key = await h.call(`/api/projects/${p.id}/keys`, {
      method: 'POST',
      as: h.admin,
      body: { name: 'web', environment_id: p.production, kind: 'client' },
    })
    const refused = await evaluate({ context: {} }, { kind: 'bearer', secret: key.body.key })
    expect(refused.status).toBe(403)
    expect(refused.body).toMatchObject({ code: 'forbidden', key_kind: 'client' })
  })
})
