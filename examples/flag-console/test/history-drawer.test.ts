// @vitest-environment happy-dom

import { afterEach, describe, expect, it } from 'vitest'
import type { HistoryEntry } from '../src/conflict-model.js'
import { historyDrawer } from '../src/history-drawer.js'

afterEach(() => {
  document.body.replaceChildren()
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
  declaredActor: { name: 'Ann', verified: false },
  source: { type: 'sync', batchId: '0123456789abcdef' },
  ...fields,
})

describe('the history drawer', () => {
  it('marks a name the device declared as declared, and marks nothing where no name was declared', async () => {
    const entries = [entry({}), entry({ revision: 3, declaredActor: null, source: { type: 'api', route: 'x' } })]
    historyDrawer('checkout', async () => entries, null)
    await new Promise((resolve) => setTimeout(resolve, 0))
    const rows = [...document.querySelectorAll('.history-entry .history-who')]
    expect(rows.map((p) => p.textContent?.replace(/ · .*$/, ''))).toEqual(['Ann (declared by the device)', 'Someone'])
    expect(rows[0]?.querySelector('strong')?.textContent).toBe('Ann')
    expect(rows[0]?.querySelector('.history-declared')?.textContent).toBe('(declared by the device)')
  })
})
