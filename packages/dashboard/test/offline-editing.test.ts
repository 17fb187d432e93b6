import type { Operation } from '@flagsync/protocol'
import { describe, expect, it } from 'vitest'
import { describeOperation } from '../src/describe-operation.js'
import { staleEnvironments } from '../src/editable-flags.js'
import { buildFlag, changesOf, draftOf, recordOf } from '../src/flag-draft.js'
import type { Flag } from '../src/types.js'

const flag = (over: Partial<Flag>): Flag => ({
  key: 'f',
  is_enabled: true,
  rollout_percentage: null,
  description: null,
  rules: [],
  flag_type: 'boolean',
  variants: [],
  prerequisites: [],
  ...over,
})

describe('an offline save queues only what was edited', () => {
  const base = flag({
    key: 'checkout',
    flag_type: 'string',
    default_value: 'a',
    variants: [{ value: 'a', weight: 1 }],
    rules: [{ segment_key: 'beta' }],
    rollout_percentage: 50,
    revision: 7,
  })
  const start = draftOf(base)

  it('names no field when nothing changed, whatever the service filled in', () => {
    expect(changesOf(buildFlag(start).flag, buildFlag(draftOf(base)).flag)).toEqual({})
  })

  it('names the edited fields only, whole (a merge patch replaces arrays)', () => {
    const edited = {
      ...start,
      rollout: '80',
      variants: [...start.variants, { value: 'b', weight: '3' }],
      rules: [
        ...start.rules,
        {
          kind: 'attribute' as const,
          attribute: 'country',
          operator: 'equals' as const,
          values: 'NL, BE',
          segmentKey: '',
          variant: 'b',
        },
      ],
    }
    expect(changesOf(buildFlag(start).flag, buildFlag(edited).flag)).toEqual({
      rollout_percentage: 80,
      variants: [
        { value: 'a', weight: 1 },
        { value: 'b', weight: 3 },
      ],
      rules: [
        { segment_key: 'beta' },
        { attribute: 'country', operator: 'equals', values: ['NL', 'BE'], variant: 'b' },
      ],
    })
  })

  it('clears an emptied value with null and keeps the segment reference as it was', () => {
    const changes = changesOf(buildFlag(start).flag, buildFlag({ ...start, defaultValue: '', rollout: '' }).flag)
    expect(changes).toEqual({ default_value: null, rollout_percentage: null })
  })

  it('queues a new flag as the whole record, without the values left empty', () => {
    const record = recordOf(buildFlag({ ...draftOf(null), key: 'fresh', enabled: true }).flag)
    expect(record).toEqual({
      key: 'fresh',
      is_enabled: true,
      description: null,
      flag_type: 'boolean',
      rollout_percentage: null,
      variants: [],
      rules: [],
      prerequisites: [],
    })
    expect('default_value' in record).toBe(false)
  })
})

describe('the pending panel in words', () => {
  it('says what each queued operation does, field by field, long values cut', () => {
    expect(
      describeOperation({
        action: 'update',
        collection: 'flags',
        recordId: 'checkout',
        changes: { rollout_percentage: 80, description: 'x'.repeat(100) },
      }),
    ).toBe(`update checkout: rollout_percentage = 80; description = "${'x'.repeat(58)}…`)
    expect(
      describeOperation({ action: 'insert', collection: 'flags', recordId: 'fresh', record: { key: 'fresh' } }),
    ).toBe('create fresh')
    expect(describeOperation({ action: 'delete', collection: 'flags', recordId: 'old' })).toBe('delete old')
  })

  it('leaves out bidirectional controls of the values it quotes', () => {
    const op: Operation = {
      action: 'update',
      collection: 'flags',
      recordId: 'checkout',
      changes: { description: 'a\u202Eb' },
    }
    expect(describeOperation(op)).toBe('update checkout: description = "ab"')
  })
})

describe('the editable copy (REST flags, segments unexpanded) follows the stream', () => {
  const env = (...flags: Flag[]) => new Map(flags.map((f) => [f.key, f]))
  it('refetches an environment whose keys or revisions differ from the stream, and only those', () => {
    const stream = new Map([
      ['prod', env(flag({ key: 'a', revision: 3 }), flag({ key: 'b', revision: 5 }))],
      ['dev', env(flag({ key: 'a', revision: 2 }))],
      ['qa', env()],
    ])
    const saved = new Map([
      ['prod', env(flag({ key: 'a', revision: 3 }), flag({ key: 'b', revision: 4 }))],
      ['dev', env(flag({ key: 'a', revision: 2, rules: [{ segment_key: 'beta' }] }))],
    ])
    expect(staleEnvironments(stream, saved, ['prod', 'dev', 'qa'])).toEqual(['prod', 'qa'])
    saved.set('prod', env(flag({ key: 'a', revision: 3 })))
    saved.set('qa', env())
    expect(staleEnvironments(stream, saved, ['prod', 'dev', 'qa'])).toEqual(['prod'])
    saved.set('prod', env(flag({ key: 'a', revision: 3 }), flag({ key: 'c', revision: 5 })))
    expect(staleEnvironments(stream, saved, ['prod', 'dev', 'qa'])).toEqual(['prod'])
  })
})
