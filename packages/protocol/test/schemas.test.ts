import {
  applyFlagPatch,
  batchIdSchema,
  flagPatchSchema,
  flagSchema,
  formatZodError,
  operationSchema,
  toIssues,
} from '@flagsync/protocol'
import { describe, expect, it } from 'vitest'

describe('flagSchema', () => {
  it('fills defaults for optional fields', () => {
    expect(flagSchema.parse({ key: 'a', is_enabled: true })).toEqual({
      key: 'a',
      is_enabled: true,
      rollout_percentage: null,
      description: null,
      rules: [],
    })
  })

  it('rejects a typo field by name', () => {
    const result = flagSchema.safeParse({ key: 'a', is_enabled: true, is_enable: false })
    expect(result.success).toBe(false)
    if (!result.success) expect(formatZodError(result.error)).toContain('is_enable')
  })

  it('names the failing nested path', () => {
    const result = flagSchema.safeParse({
      key: 'a',
      is_enabled: true,
      rules: [{ attribute: 'country', operator: 'near', values: ['x'] }],
    })
    expect(result.success).toBe(false)
    if (!result.success) expect(toIssues(result.error)[0]?.path).toBe('rules[0].operator')
  })

  it.each([
    ['rollout above 100', { rollout_percentage: 101 }],
    ['fractional rollout', { rollout_percentage: 12.5 }],
    ['key with a space', { key: 'a b' }],
    ['key too long', { key: 'k'.repeat(101) }],
    ['string switch', { is_enabled: 'yes' }],
    ['rule without values', { rules: [{ attribute: 'a', operator: 'equals', values: [] }] }],
  ])('rejects %s', (_name, override) => {
    expect(flagSchema.safeParse({ key: 'a', is_enabled: true, ...override }).success).toBe(false)
  })
})

describe('flagPatchSchema', () => {
  it('allows null to clear nullable fields but not the master switch', () => {
    expect(flagPatchSchema.safeParse({ description: null, rollout_percentage: null }).success).toBe(true)
    expect(flagPatchSchema.safeParse({ is_enabled: null }).success).toBe(false)
  })
})

describe('operationSchema', () => {
  it('accepts the three actions with their payloads', () => {
    for (const op of [
      { action: 'insert', collection: 'flags', recordId: 'a', record: { key: 'a' } },
      { action: 'update', collection: 'flags', recordId: 'a', changes: { is_enabled: false } },
      { action: 'delete', collection: 'flags', recordId: 'a' },
    ]) {
      expect(operationSchema.safeParse(op).success).toBe(true)
    }
  })

  it.each([
    ['a NUL', 'a\u0000b'],
    ['a newline', 'a\nb'],
    ['a lone high surrogate', 'a\uD800b'],
    ['a lone low surrogate', '\uDC00'],
  ])('rejects ids with %s, which databases would store ambiguously', (_name, id) => {
    expect(operationSchema.safeParse({ action: 'delete', collection: 'c', recordId: id }).success).toBe(false)
    expect(operationSchema.safeParse({ action: 'delete', collection: id, recordId: 'a' }).success).toBe(false)
    expect(batchIdSchema.safeParse(id).success).toBe(false)
  })

  it('accepts ids with paired surrogates (emoji) and other unicode', () => {
    expect(batchIdSchema.safeParse('batch-😀-ü').success).toBe(true)
  })

  it('rejects an unknown action and a delete carrying data', () => {
    expect(operationSchema.safeParse({ action: 'upsert', collection: 'c', recordId: 'a' }).success).toBe(false)
    expect(operationSchema.safeParse({ action: 'delete', collection: 'c', recordId: 'a', record: {} }).success).toBe(
      false,
    )
  })
})

describe('applyFlagPatch', () => {
  const base = flagSchema.parse({ key: 'f', is_enabled: true, description: 'd', rollout_percentage: 30 })

  it('changes only the given fields and clears nullable ones with null', () => {
    const result = applyFlagPatch(base, { is_enabled: false, description: null })
    expect(result).toEqual({ ok: true, flag: { ...base, is_enabled: false, description: null } })
  })

  it('replaces arrays whole', () => {
    const rules = [{ attribute: 'country', operator: 'equals' as const, values: ['NL'] }]
    const once = applyFlagPatch(base, { rules })
    expect(once.ok && once.flag.rules).toEqual(rules)
  })

  it('rejects null for a required field, a key change and unknown fields', () => {
    expect(applyFlagPatch(base, { is_enabled: null }).ok).toBe(false)
    expect(applyFlagPatch(base, { key: 'other' })).toMatchObject({ ok: false, issues: [{ path: 'key' }] })
    expect(applyFlagPatch(base, { key: 'f', is_enable: true }).ok).toBe(false)
    expect(applyFlagPatch(base, ['not', 'an', 'object']).ok).toBe(false)
  })
})
