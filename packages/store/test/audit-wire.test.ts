import { auditEntrySchema, auditPageSchema } from '@flagsync/protocol'
import { type AuditEntry, auditEntryToWire, auditPageToWire } from '@flagsync/store'
import { describe, expect, it } from 'vitest'

const entry = (over: Partial<AuditEntry> = {}): AuditEntry => ({
  revision: 7,
  time: Date.UTC(2026, 10, 25, 3, 0, 0),
  scope: 'env-1',
  key: 'beta',
  action: 'update',
  before: { key: 'beta', is_enabled: false },
  beforeKnown: true,
  after: { key: 'beta', is_enabled: true },
  changedFields: ['is_enabled'],
  actor: null,
  declaredActor: null,
  source: null,
  batchId: null,
  operationIndex: null,
  ...over,
})

describe('auditEntryToWire', () => {
  it('sends the time as ISO 8601 and actors as verified or declared', () => {
    const wire = auditEntryToWire(entry({ actor: 'ci-token', declaredActor: 'alice' }))
    expect(wire).toMatchObject({
      revision: 7,
      time: '2026-11-25T03:00:00.000Z',
      key: 'beta',
      actor: { name: 'ci-token', verified: true },
      declaredActor: { name: 'alice', verified: false },
    })
    expect(auditEntrySchema.safeParse(wire).success).toBe(true)
    expect('scope' in wire).toBe(false)
  })

  it.each([
    [
      { source: 'sync', batchId: 'b-1', operationIndex: 3 },
      { type: 'sync', batchId: 'b-1', operationIndex: 3 },
    ],
    [{ source: 'api:PATCH /api/flags/:key' }, { type: 'api', route: 'PATCH /api/flags/:key' }],
    [{ source: 'change-request:12' }, { type: 'change_request', id: 12 }],
    [{ source: 'change-request:x' }, { type: 'other', name: 'change-request:x' }],
    [
      { source: 'schedule:12', actor: 'ann@example.com' },
      { type: 'schedule', id: 12, createdBy: { name: 'ann@example.com', verified: true } },
    ],
    [
      { source: 'schedule:12 approved by bob@example.com (token "ci")', actor: 'ann@example.com' },
      {
        type: 'schedule',
        id: 12,
        createdBy: { name: 'ann@example.com', verified: true },
        approvedBy: { name: 'bob@example.com (token "ci")', verified: true },
      },
    ],
    [
      { source: 'schedule:12,13', actor: 'ann@example.com' },
      { type: 'other', name: 'schedule:12,13' },
    ],
    [
      { source: 'schedule:12', actor: null },
      { type: 'other', name: 'schedule:12' },
    ],
    [{ source: 'maintenance' }, { type: 'other', name: 'maintenance' }],
    [{ source: null }, null],
  ] as const)('parses the recorded source %j', (over, source) => {
    const wire = auditEntryToWire(entry(over))
    expect(wire.source).toEqual(source)
    expect(auditEntrySchema.safeParse(wire).success).toBe(true)
  })
})

describe('auditPageToWire', () => {
  it('sends the cursor as a string and maps entries with the given mapper', () => {
    const page = { entries: [entry(), entry({ revision: 5 })], nextCursor: 5 }
    const wire = auditPageToWire(page)
    expect(wire.nextCursor).toBe('5')
    expect(auditPageSchema.safeParse(wire).success).toBe(true)
    const scoped = auditPageToWire({ entries: [entry()], nextCursor: null }, (e) => ({ env: e.scope }))
    expect(scoped).toEqual({ entries: [{ env: 'env-1' }], nextCursor: null })
  })
})
