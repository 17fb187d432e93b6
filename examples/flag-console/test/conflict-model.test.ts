import type { Conflict } from '@flagsync/sync-client'
import { describe, expect, it } from 'vitest'
import {
  conflictFields,
  conflictTitle,
  describeEntry,
  discardMessage,
  formatValue,
  type HistoryEntry,
  personOf,
  whoChanged,
} from '../src/conflict-model.js'

const conflict = (fields: Partial<Conflict> = {}): Conflict => ({
  id: 1,
  collection: 'flags',
  recordId: 'checkout',
  kind: 'field',
  fields: ['rollout_percentage'],
  mine: {
    action: 'update',
    collection: 'flags',
    recordId: 'checkout',
    changes: { rollout_percentage: 90, description: 'mine' },
    baseRevision: 4,
  },
  base: { key: 'checkout', rollout_percentage: null, description: null },
  current: { key: 'checkout', rollout_percentage: 10, description: null, revision: 5 },
  currentRevision: 5,
  reason: 'rollout_percentage also changed after revision 4',
  batchId: 'b',
  detectedAt: 0,
  ...fields,
})

const entry = (fields: Partial<HistoryEntry>): HistoryEntry => ({
  revision: 5,
  time: '2026-11-25T10:00:00.000Z',
  key: 'checkout',
  action: 'update',
  before: { rollout_percentage: null },
  after: { rollout_percentage: 10 },
  changedFields: ['rollout_percentage'],
  actor: { name: 'sdk-key' },
  declaredActor: { name: 'Zo%C3%AB', verified: false },
  source: { type: 'sync', batchId: '0123456789abcdef' },
  ...fields,
})

describe('conflicts in words', () => {
  it('lists base / mine / theirs per field, the shared fields first, without developer terms', () => {
    expect(conflictFields(conflict())).toEqual([
      { field: 'rollout_percentage', label: 'Rollout', base: 'Everyone', mine: '90%', theirs: '10%' },
      { field: 'description', label: 'Description', base: 'No description', mine: 'mine', theirs: 'No description' },
    ])
    const deleted = conflict({ kind: 'deleted', current: null, currentRevision: null, fields: [] })
    expect(conflictFields(deleted).map((f) => f.theirs)).toEqual(['Deleted', 'Deleted'])
  })

  it('names who made the other change and when, from the audit trail (the declared name, decoded)', () => {
    const history = [entry({}), entry({ revision: 3, declaredActor: { name: 'Old' } })]
    const by = whoChanged(conflict(), history)
    expect(by?.who).toBe('Zoë')
    expect(conflictTitle(conflict(), by)).toMatch(/^Zoë changed “checkout” on .+ while you were changing it$/)
    expect(conflictTitle(conflict({ kind: 'deleted' }), null)).toBe(
      'Someone deleted “checkout” while you were changing it',
    )
    expect(whoChanged(conflict(), [entry({ revision: 4 })])).toBeNull()
    expect(personOf({ actor: { name: 'sdk-key' }, declaredActor: null })).toBe('Someone')
  })

  it('describes history entries and what a discard loses', () => {
    expect(describeEntry(entry({}))).toMatchObject({
      who: 'Zoë',
      declared: true,
      what: ['Rollout: Everyone → 10%'],
      from: 'from a device (change set 01234567)',
    })
    expect(
      describeEntry(entry({ action: 'delete', source: { type: 'api', route: 'DELETE /api/flags/:key' } })),
    ).toMatchObject({
      declared: true,
      what: ['Deleted the flag'],
      from: 'through the server’s API',
    })
    // Without a declared name the server's verified one is not shown either: "Someone", nothing to mark.
    expect(describeEntry(entry({ declaredActor: null }))).toMatchObject({ who: 'Someone', declared: false })
    expect(formatValue('is_enabled', true)).toBe('On')
    expect(formatValue('rules', [{}, {}])).toBe('2 rules')
    expect(discardMessage('Turn off “beta”')).toBe(
      '“Turn off “beta”” will not be sent to the server and cannot be recovered. Your other changes stay.',
    )
  })
})
