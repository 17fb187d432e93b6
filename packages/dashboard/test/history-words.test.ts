import { type ServiceAuditEntryWire, serviceAuditEntrySchema } from '@flagsync/protocol'
import { describe, expect, it } from 'vitest'
import { changePhrase, type HistoryNames, sentenceOf } from '../src/history-words.js'

const ann = { name: 'ann@example.com', verified: true as const }
const dan = { name: 'dan@example.com', verified: true as const }
const names: HistoryNames = {
  person: (email) => ({ 'ann@example.com': 'Ann', 'dan@example.com': 'Dan' })[email],
  environment: (id) => ({ prod: 'Production', staging: 'Staging' })[id],
}

const entry = (over: Partial<ServiceAuditEntryWire>): ServiceAuditEntryWire => {
  const e: ServiceAuditEntryWire = {
    revision: 9,
    time: '2026-11-25T10:00:00.000Z',
    collection: 'flags',
    environment_id: 'prod',
    key: 'checkout',
    action: 'update',
    before: { key: 'checkout', is_enabled: false, rollout_percentage: 100 },
    beforeKnown: true,
    after: { key: 'checkout', is_enabled: true, rollout_percentage: 100 },
    changedFields: ['is_enabled'],
    actor: ann,
    declaredActor: null,
    source: { type: 'api', route: 'PATCH /api/environments/:env_id/flags/:key' },
    ...over,
  }
  expect(serviceAuditEntrySchema.safeParse(e).success).toBe(true)
  return e
}
const rollout = (from: number, to: number) => ({
  before: { key: 'checkout', is_enabled: true, rollout_percentage: from },
  after: { key: 'checkout', is_enabled: true, rollout_percentage: to },
  changedFields: ['rollout_percentage'],
})

describe('a history entry as a sentence', () => {
  it('a change request: the approver approved the requester’s request, and what it did where', () => {
    const approved = entry({ actor: dan, source: { type: 'change_request', id: 2, requestedBy: ann } })
    expect(sentenceOf(approved, names)).toBe(
      'Dan approved change request #2 by Ann: turned `checkout` on in Production',
    )
    const unknownRequester = entry({ actor: dan, source: { type: 'change_request', id: 3 } })
    expect(sentenceOf(unknownRequester, names)).toBe(
      'Dan approved change request #3: turned `checkout` on in Production',
    )
  })

  it('a schedule: its creator and approver, and what it set', () => {
    const scheduled = entry({
      ...rollout(100, 25),
      source: { type: 'schedule', id: 5, createdBy: ann, approvedBy: dan },
    })
    expect(sentenceOf(scheduled, names)).toBe(
      'Scheduled change #5 by Ann (approved by Dan) set rollout of `checkout` to 25 % in Production',
    )
    const alone = entry({ ...rollout(25, 50), source: { type: 'schedule', id: 6, createdBy: ann } })
    expect(sentenceOf(alone, names)).toBe('Scheduled change #6 by Ann set rollout of `checkout` to 50 % in Production')
  })

  it('a promotion: from which environment to which', () => {
    const promoted = entry({ key: 'beta', source: { type: 'other', name: 'promote from Staging' } })
    expect(sentenceOf(promoted, names)).toBe('Ann promoted `beta` from Staging to Production')
    const byRoute = entry({
      key: 'beta',
      source: { type: 'api', route: 'POST /api/environments/:env_id/flags/:key/promote' },
    })
    expect(sentenceOf(byRoute, names)).toBe('Ann promoted `beta` to Production')
  })

  it('an API write: create, update, delete; a segment belongs to no environment', () => {
    expect(sentenceOf(entry({ action: 'create', before: null, changedFields: ['key', 'is_enabled'] }), names)).toBe(
      'Ann created `checkout` in Production',
    )
    const deleted = entry({ key: 'old-banner', action: 'delete', after: null, changedFields: ['key'] })
    expect(sentenceOf(deleted, names)).toBe('Ann deleted `old-banner` in Production')
    const segment = entry({
      collection: 'segments',
      environment_id: null,
      key: 'beta',
      before: { key: 'beta', rules: [] },
      after: { key: 'beta', rules: [{ attribute: 'email', operator: 'ends_with', values: ['@a.io'] }] },
      changedFields: ['rules'],
    })
    expect(sentenceOf(segment, names)).toBe('Ann changed the rules of segment `beta`')
  })

  it('leaves out bidirectional controls of the names and values it quotes, so none reorders the sentence', () => {
    const spoofing: HistoryNames = { ...names, person: () => 'Ann\u202E nimda', environment: () => 'Prod\u2067uction' }
    const valued = entry({
      before: { key: 'checkout', is_enabled: true, description: 'a' },
      after: { key: 'checkout', is_enabled: true, description: 'b\u202Dc\u2069' },
      changedFields: ['description'],
    })
    const sentence = sentenceOf(valued, spoofing)
    expect(sentence).toBe('Ann nimda set the description of `checkout` to "bc" in Production')
    expect(sentence).not.toMatch(/[\u202A-\u202E\u2066-\u2069]/)
  })

  it('a sync batch: from an offline editor, with its batch', () => {
    const synced = entry({
      before: { key: 'checkout', is_enabled: true },
      after: { key: 'checkout', is_enabled: false },
      source: { type: 'sync', batchId: '1a2b3c4d-aaaa-bbbb-cccc-dddddddddddd', operationIndex: 0 },
    })
    expect(sentenceOf(synced, names)).toBe(
      'Ann turned `checkout` off in Production, synced from an offline editor (batch 1a2b3c4d…)',
    )
  })

  it('names people by their display name, keeping the token; unknown people as the trail has them, never an environment id', () => {
    const token = entry({ actor: { name: 'ann@example.com (token "ci")', verified: true } })
    expect(sentenceOf(token, names)).toBe('Ann (token "ci") turned `checkout` on in Production')
    const stranger = entry({ actor: { name: 'eve@example.com', verified: true }, environment_id: 'gone' })
    expect(sentenceOf(stranger, names)).toBe('eve@example.com turned `checkout` on')
    expect(sentenceOf(entry({}))).toBe('ann@example.com turned `checkout` on')
    expect(sentenceOf(entry({ actor: null, source: null }), names)).toBe('Someone turned `checkout` on in Production')
  })

  it('several fields in one sentence: the switch and the rollout first, then the rest', () => {
    const many = entry({
      before: { key: 'checkout', is_enabled: false, rollout_percentage: 100, description: 'old', rules: [] },
      after: {
        key: 'checkout',
        is_enabled: true,
        rollout_percentage: 25,
        description: 'new',
        rules: [{ attribute: 'plan', operator: 'equals', values: ['pro'], variant: true }],
      },
      changedFields: ['description', 'is_enabled', 'rollout_percentage', 'rules'],
    })
    expect(changePhrase(many)).toBe(
      'turned `checkout` on, set rollout to 25 %, set the description to "new" and changed the rules',
    )
    const removed = entry({
      before: { key: 'checkout', default_value: 'blue' },
      after: { key: 'checkout' },
      changedFields: ['default_value'],
    })
    expect(changePhrase(removed)).toBe('removed the default value of `checkout`')
  })
})

describe('a flag’s project-level record (tags, owner, archive) as a sentence', () => {
  const meta = (tags: string[], owner: number | null, archived: unknown = null) => ({
    key: 'theme',
    tags,
    owner,
    archived,
  })
  const metaEntry = (action: 'create' | 'update' | 'delete', before: unknown, after: unknown) =>
    entry({
      environment_id: null,
      key: 'theme',
      action,
      before: before as ServiceAuditEntryWire['before'],
      after: after as ServiceAuditEntryWire['after'],
      changedFields: ['tags', 'owner'],
      source: { type: 'api', route: 'PATCH /api/projects/:project_id/flags/:key/meta' },
    })
  const withUsers: HistoryNames = { ...names, user: (id) => ({ 2: 'Dan' })[id] }
  const archive = { at: '2026-11-28T12:00:00.000Z', by: 'ann@example.com', flags: {} }

  it('says what was tagged and who owns it, never "created"', () => {
    expect(sentenceOf(metaEntry('create', null, meta(['payments', 'web'], 2)), withUsers)).toBe(
      'Ann tagged `theme` payments, web and made Dan its owner',
    )
    expect(sentenceOf(metaEntry('update', meta(['web'], 2), meta([], 2)), withUsers)).toBe(
      'Ann removed the tags of `theme`',
    )
    expect(sentenceOf(metaEntry('update', meta([], 2), meta([], null)), withUsers)).toBe(
      'Ann removed the owner of `theme`',
    )
    expect(sentenceOf(metaEntry('update', meta([], null), meta([], 7)), withUsers)).toBe(
      'Ann made user #7 the owner of `theme`',
    )
  })

  it('says archived and restored, not created and deleted', () => {
    expect(sentenceOf(metaEntry('create', null, meta([], null, archive)), withUsers)).toBe('Ann archived `theme`')
    expect(sentenceOf(metaEntry('update', meta(['web'], 2), meta(['web'], 2, archive)), withUsers)).toBe(
      'Ann archived `theme`',
    )
    expect(sentenceOf(metaEntry('delete', meta([], null, archive), null), withUsers)).toBe('Ann restored `theme`')
  })

  it('leaves a segment, which has no environment either, as it was', () => {
    const segment = entry({ collection: 'segments', environment_id: null, key: 'beta', action: 'create', before: null })
    expect(sentenceOf(segment, withUsers)).toBe('Ann created segment `beta`')
  })
})
