import { type ConflictCheck, jsonEqual as deepEqual, detectConflict } from '@flagsync/store'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'

const base = { key: 'k', is_enabled: true, rollout_percentage: 10, description: null, rules: [] }
const known = (record: Record<string, unknown> | null) => ({ record, known: true })

function check(over: Partial<ConflictCheck>): ConflictCheck {
  return {
    action: 'update',
    sets: {},
    baseRevision: 5,
    base: known(base),
    current: base,
    currentRevision: 5,
    storeRevision: 9,
    ...over,
  }
}

describe('detectConflict', () => {
  describe('a base revision the store never issued (a client of a restored or reset database)', () => {
    const ahead = (over: Partial<ConflictCheck>) => check({ baseRevision: 41, storeRevision: 9, ...over })

    it('checks at record level instead of trusting the record as unchanged', () => {
      const current = { ...base, rollout_percentage: 20 }
      const verdict = detectConflict(ahead({ sets: { rollout_percentage: 50 }, current, currentRevision: 7 }))
      expect(verdict).toEqual({
        outcome: 'conflict',
        kind: 'field',
        fields: ['rollout_percentage'],
        reason: expect.stringContaining('revision 41 was never issued here (the newest is 9)'),
      })
      // The same with the log claiming to know revision 41 (it answers with the latest state at or before it).
      expect(detectConflict(ahead({ sets: { rollout_percentage: 50 }, current, base: known(current) }))).toMatchObject({
        outcome: 'conflict',
        fields: ['rollout_percentage'],
      })
    })

    it('applies what sets the values already there, and refuses a delete of a record it cannot vouch for', () => {
      expect(detectConflict(ahead({ sets: { rollout_percentage: 10 } }))).toEqual({ outcome: 'apply' })
      expect(detectConflict(ahead({ action: 'delete', sets: null }))).toMatchObject({
        outcome: 'conflict',
        kind: 'field',
      })
      expect(detectConflict(ahead({ current: null, currentRevision: null }))).toMatchObject({
        outcome: 'conflict',
        kind: 'deleted',
      })
    })

    it('keeps the shortcut for a base the store did issue', () => {
      expect(detectConflict(check({ baseRevision: 9, storeRevision: 9, currentRevision: 9, sets: { x: 1 } }))).toEqual({
        outcome: 'apply',
      })
    })
  })

  it('applies when nothing changed since the base', () => {
    expect(detectConflict(check({ sets: { rollout_percentage: 50 } }))).toEqual({ outcome: 'apply' })
    expect(detectConflict(check({ action: 'delete', sets: null, currentRevision: 3 }))).toEqual({ outcome: 'apply' })
  })

  it('merges when the record changed since the base in other fields only', () => {
    const current = { ...base, description: 'theirs' }
    expect(detectConflict(check({ sets: { rollout_percentage: 50 }, current, currentRevision: 7 }))).toEqual({
      outcome: 'merge',
    })
  })

  it('is a field conflict when both changed the same field to different values', () => {
    const current = { ...base, rollout_percentage: 30 }
    const verdict = detectConflict(check({ sets: { rollout_percentage: 50 }, current, currentRevision: 7 }))
    expect(verdict).toMatchObject({ outcome: 'conflict', kind: 'field', fields: ['rollout_percentage'] })
  })

  it('is no conflict when both set the same field to the same value', () => {
    const current = { ...base, rollout_percentage: 50 }
    expect(detectConflict(check({ sets: { rollout_percentage: 50 }, current, currentRevision: 7 }))).toEqual({
      outcome: 'merge',
    })
  })

  it('compares arrays and objects structurally, whatever the key order', () => {
    const rule = { attribute: 'country', operator: 'equals', values: ['DE'] }
    const current = { ...base, rules: [rule] }
    const sets = { rules: [{ values: ['DE'], operator: 'equals', attribute: 'country' }] }
    expect(detectConflict(check({ sets, current, currentRevision: 7 })).outcome).toBe('merge')
    expect(deepEqual([{ a: 1 }], [{ a: 2 }])).toBe(false)
    expect(deepEqual({ a: [1] }, { a: [1], b: undefined })).toBe(true)
  })

  it('is a deleted conflict for an update or delete of a record deleted since the base', () => {
    for (const action of ['update', 'delete'] as const) {
      const verdict = detectConflict(
        check({
          action,
          sets: action === 'update' ? { is_enabled: false } : null,
          current: null,
          currentRevision: null,
        }),
      )
      expect(verdict).toMatchObject({ outcome: 'conflict', kind: 'deleted' })
    }
  })

  it('applies an update or delete of a record that did not exist at the base either (the usual rules decide)', () => {
    const verdict = detectConflict(check({ base: known(null), current: null, currentRevision: null }))
    expect(verdict).toEqual({ outcome: 'apply' })
  })

  it('is a deleted conflict for an insert replacing a record deleted since the base; applies when the base had none or the log cannot tell', () => {
    const insert = {
      action: 'insert' as const,
      sets: { ...base, is_enabled: false },
      current: null,
      currentRevision: null,
    }
    expect(detectConflict(check(insert))).toMatchObject({ outcome: 'conflict', kind: 'deleted' })
    expect(detectConflict(check({ ...insert, base: known(null) }))).toEqual({ outcome: 'apply' })
    expect(detectConflict(check({ ...insert, base: { record: null, known: false } }))).toEqual({ outcome: 'apply' })
  })

  it('is an exists conflict for an insert of a key someone else created since the base', () => {
    const verdict = detectConflict(
      check({ action: 'insert', sets: { ...base, is_enabled: false }, base: known(null), currentRevision: 7 }),
    )
    expect(verdict).toMatchObject({ outcome: 'conflict', kind: 'exists', fields: ['is_enabled'] })
    // The same record as theirs loses nothing.
    expect(detectConflict(check({ action: 'insert', sets: base, base: known(null), currentRevision: 7 }))).toEqual({
      outcome: 'apply',
    })
    // A key that does not exist is inserted as always.
    expect(
      detectConflict(check({ action: 'insert', sets: base, base: known(null), current: null, currentRevision: null })),
    ).toEqual({ outcome: 'apply' })
  })

  it('is a field conflict for deleting a record others changed since the base', () => {
    const current = { ...base, description: 'theirs' }
    expect(detectConflict(check({ action: 'delete', sets: null, current, currentRevision: 7 }))).toMatchObject({
      outcome: 'conflict',
      kind: 'field',
      fields: ['description'],
    })
  })

  it('checks record-level and says so when the base was pruned', () => {
    const unknown = { record: null, known: false }
    const current = { ...base, description: 'theirs' }
    const verdict = detectConflict(
      check({ sets: { rollout_percentage: 50 }, base: unknown, current, currentRevision: 7 }),
    )
    expect(verdict).toMatchObject({ outcome: 'conflict', kind: 'field', fields: ['rollout_percentage'] })
    expect(verdict.outcome === 'conflict' && verdict.reason).toContain('record-level')
    // Unchanged since the base: still applied.
    expect(detectConflict(check({ sets: { rollout_percentage: 50 }, base: unknown, currentRevision: 5 }))).toEqual({
      outcome: 'apply',
    })
  })
})

// Two editors start from the same record; A's changes are committed first, then B's operation is checked.
const FIELDS = ['is_enabled', 'rollout_percentage', 'description', 'rules'] as const
const value = fc.oneof(fc.boolean(), fc.integer({ min: 0, max: 3 }), fc.constant(null), fc.constantFrom('x', 'y'))
const edit = fc.dictionary(fc.constantFrom(...FIELDS), value, { maxKeys: 4 })
const record = fc.record({
  key: fc.constant('k'),
  is_enabled: value,
  rollout_percentage: value,
  description: value,
  rules: value,
})

describe('detectConflict properties (two editors, one base)', () => {
  it('never silently overwrites: a field A changed is kept or reported, and disjoint edits merge', () => {
    fc.assert(
      fc.property(record, edit, edit, (start, a, b) => {
        const afterA = { ...start, ...a }
        const changedByA = FIELDS.filter((f) => !deepEqual(afterA[f], start[f]))
        const verdict = detectConflict({
          action: 'update',
          sets: b,
          baseRevision: 1,
          base: { record: start, known: true },
          current: afterA,
          currentRevision: changedByA.length > 0 ? 2 : 1,
          storeRevision: 3,
        })
        const clashing = changedByA.filter((f) => Object.hasOwn(b, f) && !deepEqual(b[f], afterA[f]))
        if (clashing.length > 0) {
          expect(verdict).toMatchObject({ outcome: 'conflict', kind: 'field' })
          if (verdict.outcome === 'conflict') expect([...verdict.fields].sort()).toEqual([...clashing].sort())
        } else {
          expect(verdict.outcome).not.toBe('conflict')
          // Applying B on top of the current record keeps every field A changed.
          const result = { ...afterA, ...b }
          for (const f of changedByA) expect(result[f]).toEqual(afterA[f])
        }
      }),
    )
  })

  it('applies whatever B sets when nobody else wrote since the base', () => {
    fc.assert(
      fc.property(record, edit, fc.constantFrom('insert', 'update', 'delete' as const), (start, b, action) => {
        const verdict = detectConflict({
          action,
          sets: action === 'delete' ? null : b,
          baseRevision: 3,
          base: { record: start, known: true },
          current: start,
          currentRevision: 3,
          storeRevision: 3,
        })
        expect(verdict).toEqual({ outcome: 'apply' })
      }),
    )
  })

  it('two inserts of a new key: the second conflicts (kind exists) exactly when the records differ', () => {
    fc.assert(
      fc.property(record, record, (a, b) => {
        const verdict = detectConflict({
          action: 'insert',
          sets: b,
          baseRevision: 1,
          base: { record: null, known: true },
          current: a,
          currentRevision: 2,
          storeRevision: 3,
        })
        if (deepEqual(a, b)) expect(verdict).toEqual({ outcome: 'apply' })
        else expect(verdict).toMatchObject({ outcome: 'conflict', kind: 'exists' })
      }),
    )
  })
})
