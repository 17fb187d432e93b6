import type { Operation } from '@flagsync/protocol'
import { describe, expect, it } from 'vitest'
import { flagEditAccess, knownKeys, liveLabel, withPending } from '../src/flag-view.js'
import type { Flag } from '../src/types.js'

const flag = (key: string, over: Partial<Flag> = {}): Flag => ({
  key,
  is_enabled: false,
  rollout_percentage: null,
  description: null,
  rules: [],
  flag_type: 'boolean',
  variants: [],
  prerequisites: [],
  ...over,
})

describe('the flag table with queued edits', () => {
  it('applies each environment its own queued operations, leaving the others as they are', () => {
    const dev = new Map([['a', flag('a')]])
    const prod = new Map([['a', flag('a')]])
    const view = withPending(
      new Map([
        ['dev', dev],
        ['prod', prod],
      ]),
      new Map([
        [
          'dev',
          [
            { action: 'update', collection: 'flags', recordId: 'a', changes: { is_enabled: true } },
            { action: 'insert', collection: 'flags', recordId: 'b', record: { key: 'b', is_enabled: true } },
          ] satisfies Operation[],
        ],
      ]),
    )
    expect(view.get('dev')?.get('a')?.is_enabled).toBe(true)
    expect([...(view.get('dev')?.keys() ?? [])]).toEqual(['a', 'b'])
    expect(view.get('prod')).toBe(prod)
    expect(dev.get('a')?.is_enabled).toBe(false)
  })
  it('offers every key of any environment once, sorted, as a prerequisite', () => {
    const flags = new Map([
      [
        'dev',
        new Map([
          ['zeta', flag('zeta')],
          ['alpha', flag('alpha')],
        ]),
      ],
      [
        'prod',
        new Map([
          ['alpha', flag('alpha')],
          ['mid', flag('mid')],
        ]),
      ],
    ])
    expect(knownKeys(flags)).toEqual(['alpha', 'mid', 'zeta'])
  })
})

describe('the flag table’s status and who may edit', () => {
  it('names the saved copy offline and the stream’s state online', () => {
    expect(liveLabel(true, 'live')).toBe('Saved copy')
    expect(liveLabel(false, 'live')).toBe('Live')
    expect(liveLabel(false, 'connecting')).toBe('Connecting…')
    expect(liveLabel(false, 'reconnecting')).toBe('Reconnecting…')
  })
  it('lets editors edit online, and offline once the outbox is open, saying why not', () => {
    expect(flagEditAccess('editor', false, false)).toMatchObject({ isEditor: true, canEdit: true })
    expect(flagEditAccess('admin', true, true).canEdit).toBe(true)
    const waiting = flagEditAccess('admin', true, false)
    expect(waiting.canEdit).toBe(false)
    expect(waiting.reason).toMatch(/outbox that queues edits offline is not open/)
    const viewer = flagEditAccess('viewer', false, true)
    expect(viewer).toMatchObject({ isEditor: false, canEdit: false, reason: 'needs the project editor role' })
  })
})
