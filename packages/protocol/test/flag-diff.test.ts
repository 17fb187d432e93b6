import { flagDifferences } from '@flagsync/protocol'
import { describe, expect, it } from 'vitest'

describe('flagDifferences: the one field-by-field flag diff', () => {
  it('lists the fields whose values differ, sorted, a side without the field having no member', () => {
    const from = { key: 'a', revision: 4, is_enabled: true, rules: [{ segment_key: 'beta' }], description: 'x' }
    const to = { key: 'a', revision: 9, is_enabled: false, rules: [{ segment_key: 'beta' }], default_value: 'on' }
    expect(flagDifferences(from, to)).toEqual([
      { field: 'default_value', to: 'on' },
      { field: 'description', from: 'x' },
      { field: 'is_enabled', from: true, to: false },
    ])
  })

  it('compares values as JSON (key order aside) and segment references as the reference', () => {
    expect(
      flagDifferences(
        { key: 'a', variants: [{ value: 1, weight: 2 }] },
        { key: 'a', variants: [{ weight: 2, value: 1 }] },
      ),
    ).toEqual([])
    expect(flagDifferences({ rules: [{ segment_key: 'beta' }] }, { rules: [{ segment_key: 'gamma' }] })).toEqual([
      { field: 'rules', from: [{ segment_key: 'beta' }], to: [{ segment_key: 'gamma' }] },
    ])
  })

  it('against no flag, every field but the key differs', () => {
    expect(flagDifferences(undefined, { key: 'a', is_enabled: true, revision: 3 })).toEqual([
      { field: 'is_enabled', to: true },
    ])
    expect(flagDifferences(undefined, undefined)).toEqual([])
  })
})
