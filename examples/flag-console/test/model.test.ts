import type { DeliveryError, OutboxEntry, SyncStatus } from '@flagsync/sync-client'
import { describe, expect, it } from 'vitest'
import {
  type ConsoleFlag,
  describeOperation,
  describeStatus,
  diffFlag,
  type Operation,
  parseValues,
  rejectedOperations,
  toConsoleFlag,
} from '../src/model.js'

const update = (recordId: string, changes: Record<string, unknown>): Operation => ({
  action: 'update',
  collection: 'flags',
  recordId,
  changes,
})
const insert = (recordId: string): Operation => ({
  action: 'insert',
  collection: 'flags',
  recordId,
  record: { key: recordId, is_enabled: false },
})
const remove = (recordId: string): Operation => ({ action: 'delete', collection: 'flags', recordId })

const entry = (id: number, operation: Operation, batchId: string | null = 'b1'): OutboxEntry => ({
  id,
  operation,
  batchId,
  queuedAt: 0,
})

const rejection = (fields: Partial<DeliveryError>): DeliveryError => ({
  kind: 'rejected',
  status: 422,
  code: 'validation_failed',
  message: 'rejected',
  batchId: 'b1',
  at: 0,
  ...fields,
})

describe('rejectedOperations', () => {
  // The batch as outbox() lists it: grouped by record in order of first appearance.
  const entries = [
    entry(1, update('a', { is_enabled: true })),
    entry(2, update('b', { description: 'x' })),
    entry(3, update('b', { rollout_percentage: 10 })),
    entry(4, insert('c')),
    entry(5, remove('c')), // cancels out, or is sent as a delete when c was delivered before
    entry(6, update('d', { is_enabled: false })),
    entry(7, update('e', { is_enabled: true }), null), // queued behind the batch
  ]

  it('names exactly the queued operations the sync client reports behind the rejected one', () => {
    expect(rejectedOperations(entries, rejection({ operationIndex: 0, outboxIds: [1] }))).toEqual([
      { operation: update('a', { is_enabled: true }), ids: [1] },
    ])
    expect(rejectedOperations(entries, rejection({ operationIndex: 1, outboxIds: [2, 3] }))).toEqual([
      { operation: update('b', { description: 'x', rollout_percentage: 10 }), ids: [2, 3] },
    ])
  })

  it('without an index, every operation of the batch is a suspect; entries outside the batch never are', () => {
    const all = rejectedOperations(entries, rejection({}))
    expect(all.map((r) => r.ids)).toEqual([[1], [2, 3], [4, 5], [6]])
    expect(all[2]?.operation).toEqual(remove('c'))
    expect(rejectedOperations(entries, rejection({ batchId: 'other', outboxIds: [1] }))).toEqual([])
  })
})

describe('describeOperation', () => {
  it('says what a queued flag operation does', () => {
    expect(describeOperation(insert('beta'))).toBe('Create “beta”')
    expect(describeOperation(remove('beta'))).toBe('Delete “beta”')
    expect(describeOperation(update('beta', { is_enabled: true }))).toBe('Turn on “beta”')
    expect(describeOperation(update('beta', { is_enabled: false }))).toBe('Turn off “beta”')
    expect(describeOperation(update('beta', { rollout_percentage: 5, rules: [] }))).toBe(
      'Edit rollout, rules of “beta”',
    )
  })
})

describe('describeStatus', () => {
  const status = (fields: Partial<SyncStatus>): SyncStatus => ({
    state: 'idle',
    pending: 0,
    lastError: null,
    nextAttemptAt: null,
    conflicts: 0,
    ...fields,
  })

  it('says when an edit waits for a decision instead of all synced', () => {
    expect(describeStatus(status({ conflicts: 1 }), 0)).toEqual({ tone: 'warn', label: '1 change needs your decision' })
    expect(describeStatus(status({ conflicts: 2, pending: 3 }), 0).label).toBe('2 changes need your decision')
    expect(describeStatus(status({ conflicts: 1, state: 'offline' }), 0).label).toBe('Offline — all changes saved')
  })

  it('words every state the way the header pill shows it', () => {
    expect(describeStatus(status({}), 0)).toEqual({ tone: 'ok', label: 'All changes synced' })
    expect(describeStatus(status({ pending: 3 }), 0)).toEqual({ tone: 'pending', label: '3 pending' })
    expect(describeStatus(status({ state: 'offline', pending: 1 }), 0).label).toBe('Offline — 1 pending')
    expect(describeStatus(status({ state: 'syncing', pending: 2 }), 0).label).toBe('Syncing…')
    expect(describeStatus(status({ state: 'backoff', pending: 2, nextAttemptAt: 12_000 }), 400).label).toBe(
      'Retrying in 12 s',
    )
    expect(describeStatus(status({ state: 'backoff', pending: 2, nextAttemptAt: 95_000 }), 0).label).toBe(
      'Retrying in 1 min 35 s',
    )
    const blocked = status({
      state: 'blocked',
      pending: 2,
      lastError: rejection({ message: 'flag "x" does not exist' }),
    })
    expect(describeStatus(blocked, 0)).toEqual({ tone: 'error', label: 'Blocked: flag "x" does not exist' })
  })

  it('never says "All changes synced" while the server rejects the key, or wants one', () => {
    expect(describeStatus(status({}), 0, 'rejected')).toEqual({ tone: 'error', label: 'Key rejected — not connected' })
    expect(describeStatus(status({ state: 'backoff', pending: 2, nextAttemptAt: 5000 }), 0, 'rejected')).toEqual({
      tone: 'error',
      label: 'Key rejected — 2 pending',
    })
    expect(describeStatus(status({}), 0, 'needed')).toEqual({ tone: 'error', label: 'Key needed — not connected' })
    // Offline says nothing about the key: the device is the first thing to fix.
    expect(describeStatus(status({ state: 'offline' }), 0, 'rejected').label).toBe('Offline — all changes saved')
  })
})

describe('diffFlag and parseValues', () => {
  const flag: ConsoleFlag = {
    key: 'k',
    is_enabled: true,
    rollout_percentage: null,
    description: null,
    rules: [{ attribute: 'country', operator: 'equals', values: ['NL'] }],
  }

  it('sends only the fields that changed', () => {
    expect(diffFlag(flag, { ...flag })).toEqual({})
    expect(diffFlag(flag, { ...flag, rollout_percentage: 20, description: 'd' })).toEqual({
      rollout_percentage: 20,
      description: 'd',
    })
    expect(diffFlag(flag, { ...flag, rules: [] })).toEqual({ rules: [] })
  })

  it('reads a flag with its rules in a fixed field order, so equal flags compare equal', () => {
    const fromServer = {
      key: 'k',
      is_enabled: true,
      rules: [{ values: ['NL'], operator: 'equals', attribute: 'country' }],
    }
    expect(JSON.stringify(toConsoleFlag(fromServer))).toBe(JSON.stringify(flag))
  })

  it('splits comma-separated rule values, dropping blanks', () => {
    expect(parseValues(' NL, BE ,, DE ')).toEqual(['NL', 'BE', 'DE'])
    expect(parseValues(' , ')).toEqual([])
  })
})
