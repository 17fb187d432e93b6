import { applyFlagPatch, type Flag, flagSchema, operationSchema } from '@flagsync/protocol'
import { describe, expect, it } from 'vitest'
import { quickFlag, quickOperation, quickPatch } from '../src/quick-parse.js'

/**
 * The quick checks may leave any input to the schema, but whatever they
 * accept the schema must accept too, with the same result down to the key
 * order (the stored JSON). Each input below is tried as is and through many
 * seeded mutations, valid ones and invalid ones.
 */

const rule = { attribute: 'country', operator: 'equals', values: ['DE', 'FR'] }
const validRecords: Record<string, unknown>[] = [
  { is_enabled: true },
  { is_enabled: false, rollout_percentage: 0, description: '', rules: [] },
  { is_enabled: true, rollout_percentage: 100, description: null, rules: [rule] },
  { rules: [{ values: ['x'], operator: 'ends_with', attribute: 'a' }], description: 'd', is_enabled: true },
  { is_enabled: true, rollout_percentage: null, description: 'é 🚀 \u0000 \ud800', rules: [rule, rule] },
  { key: 'flag-1', is_enabled: true },
  { is_enabled: true, description: 'x'.repeat(10_000), rules: Array.from({ length: 200 }, () => rule) },
  { is_enabled: true, rules: [{ attribute: 'a'.repeat(256), operator: 'contains', values: ['v'.repeat(1024)] }] },
  { is_enabled: true, rules: [{ attribute: 'a', operator: 'starts_with', values: Array(1000).fill('') }] },
]

/** Replacement values tried for every field: boundaries, wrong types and the like. */
const oddValues: unknown[] = [
  undefined,
  null,
  true,
  0,
  -0,
  -1,
  1.5,
  100,
  101,
  Number.NaN,
  '',
  'x',
  'x'.repeat(10_001),
  [],
  [rule],
  [{ ...rule, extra: 1 }],
  [{ ...rule, operator: 'greater_than' }],
  [{ ...rule, values: [] }],
  [{ ...rule, values: [1] }],
  [{ ...rule, attribute: '' }],
  [{ ...rule, attribute: 'a'.repeat(257) }],
  [{ ...rule, values: ['v'.repeat(1025)] }],
  [{ attribute: 'a', operator: 'equals' }],
  Array.from({ length: 201 }, () => rule),
  {},
  JSON.parse('{"__proto__": {"is_enabled": true}}'),
]
const fieldNames = ['key', 'is_enabled', 'rollout_percentage', 'description', 'rules', 'is_enable', '__proto__']
const keys = ['flag-1', 'a', 'A_b-9', '', 'bad key', 'ü', 'k'.repeat(100), 'k'.repeat(101)]

function* mutations(seed: number): Generator<Record<string, unknown>> {
  let state = seed
  const random = (n: number) => {
    state = (state * 1_103_515_245 + 12_345) % 2 ** 31
    return state % n
  }
  for (const base of validRecords) {
    yield base
    for (let i = 0; i < 60; i++) {
      const copy: Record<string, unknown> = JSON.parse(JSON.stringify(base))
      const field = fieldNames[random(fieldNames.length)] as string
      const value = oddValues[random(oddValues.length)]
      if (value === undefined) delete copy[field]
      else Object.defineProperty(copy, field, { value, enumerable: true, writable: true, configurable: true })
      yield copy
    }
  }
}

function schemaFlag(record: Record<string, unknown>, key: string): Flag | undefined {
  const parsed = flagSchema.safeParse({ ...record, key })
  return parsed.success ? parsed.data : undefined
}

describe('quickFlag agrees with flagSchema', () => {
  it('accepts the usual flags', () => {
    for (const record of validRecords) expect(quickFlag(record, 'flag-1'), JSON.stringify(record)).toBeDefined()
  })

  it('never accepts what the schema rejects, and returns what the schema returns', () => {
    let accepted = 0
    let checked = 0
    for (const key of keys) {
      for (const record of mutations(key.length + 1)) {
        checked++
        if (record.key !== undefined && record.key !== key) continue // the collection rejects these before
        const quick = quickFlag(record, key)
        if (quick === undefined) continue
        accepted++
        const expected = schemaFlag(record, key)
        expect(expected, JSON.stringify(record)).toBeDefined()
        expect(JSON.stringify(quick)).toBe(JSON.stringify(expected))
      }
    }
    // Both sides were exercised.
    expect(accepted).toBeGreaterThan(100)
    expect(checked - accepted).toBeGreaterThan(100)
  })
})

describe('quickPatch agrees with applyFlagPatch', () => {
  const existing = flagSchema.parse({ key: 'flag-1', is_enabled: true, rollout_percentage: 5, rules: [rule] })
  it('never accepts what applyFlagPatch rejects, and merges the same way', () => {
    let accepted = 0
    for (const changes of [{}, { key: 'flag-1' }, { key: 'other' }, ...mutations(7)]) {
      const quick = quickPatch(existing, changes)
      const expected = applyFlagPatch(existing, changes)
      if (quick === undefined) continue
      accepted++
      expect(expected.ok, JSON.stringify(changes)).toBe(true)
      if (expected.ok) expect(JSON.stringify(quick)).toBe(JSON.stringify(expected.flag))
    }
    expect(accepted).toBeGreaterThan(50)
  })
})

describe('quickOperation agrees with operationSchema', () => {
  const record = { is_enabled: true }
  const operations: unknown[] = [
    { action: 'insert', collection: 'flags', recordId: 'a', record },
    { recordId: 'a', record, collection: 'flags', action: 'insert' },
    { action: 'update', collection: 'todos', recordId: 'x y/z', changes: {} },
    { action: 'delete', collection: 'flags', recordId: 'a' },
    { action: 'delete', collection: 'flags', recordId: 'a', record },
    { action: 'insert', collection: 'flags', recordId: 'a', changes: record },
    { action: 'insert', collection: 'flags', recordId: 'a', record, extra: 1 },
    { action: 'insert', collection: 'flags', recordId: 'a' },
    { action: 'insert', collection: 'flags', recordId: 'a', record: [] },
    { action: 'insert', collection: 'flags', recordId: 'a', record: null },
    { action: 'insert', collection: 'flags', recordId: 'a', record: JSON.parse('{"__proto__": {"x": 1}}') },
    { action: 'upsert', collection: 'flags', recordId: 'a', record },
    { action: 'insert', collection: '', recordId: 'a', record },
    { action: 'insert', collection: 'c'.repeat(128), recordId: 'r'.repeat(256), record },
    { action: 'insert', collection: 'c'.repeat(129), recordId: 'a', record },
    { action: 'insert', collection: 'flags', recordId: 'r'.repeat(257), record },
    { action: 'insert', collection: 'flags', recordId: 'tab\there', record },
    { action: 'insert', collection: 'flags', recordId: 'del\u007f', record },
    { action: 'insert', collection: 'flags', recordId: 'ü', record },
    { action: 'insert', collection: 'flags', recordId: '\ud800', record },
    { action: 'insert', collection: 'flags', recordId: 1, record },
    { action: 'delete', collection: 'flags' },
    // baseRevision: a non-negative integer on any action
    { action: 'update', collection: 'flags', recordId: 'a', changes: record, baseRevision: 7 },
    { action: 'delete', collection: 'flags', recordId: 'a', baseRevision: 0 },
    { action: 'insert', collection: 'flags', recordId: 'a', record, baseRevision: 2 ** 53 - 1 },
    { action: 'update', collection: 'flags', recordId: 'a', changes: record, baseRevision: -1 },
    { action: 'update', collection: 'flags', recordId: 'a', changes: record, baseRevision: 1.5 },
    { action: 'update', collection: 'flags', recordId: 'a', changes: record, baseRevision: '3' },
    { action: 'update', collection: 'flags', recordId: 'a', changes: record, baseRevision: null },
    { action: 'update', collection: 'flags', recordId: 'a', changes: record, baseRevision: 2 ** 53 },
    { action: 'delete', collection: 'flags', recordId: 'a', baseRevision: 1, extra: 1 },
    null,
    [],
    'insert',
  ]

  it('never accepts what the schema rejects, and returns what the schema returns', () => {
    let accepted = 0
    for (const raw of operations) {
      const quick = quickOperation(raw)
      if (quick === undefined) continue
      accepted++
      const expected = operationSchema.safeParse(raw)
      expect(expected.success, JSON.stringify(raw)).toBe(true)
      expect(quick).toEqual(expected.data)
    }
    expect(accepted).toBe(8)
  })
})
