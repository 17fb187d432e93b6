import { describe, expect, it } from 'vitest'
import { batchesOf, type DueSchedule, MAX_PER_TRANSACTION, scheduleAudit } from '../../src/schedules/due.js'

const due = (id: number, over: Partial<DueSchedule> = {}): DueSchedule => ({
  id,
  environment_id: 'env-a',
  flag_key: `f${id}`,
  created_by_actor: 'ann@example.com',
  approved_by_actor: null,
  ...over,
})

describe('due schedules in transactions', () => {
  it('shares a transaction between schedules of one environment, creator and approver, each on its own flag', () => {
    const batches = batchesOf([
      due(1),
      due(2, { environment_id: 'env-b' }),
      due(3, { created_by_actor: 'bob@example.com' }),
      due(4, { approved_by_actor: 'bob@example.com' }),
      due(5),
      due(6, { flag_key: 'f1' }),
      due(7),
    ])
    expect(batches.map((b) => b.map((s) => s.id))).toEqual([[1, 5], [2], [3], [4], [6, 7]])
  })

  it('keeps a transaction within its size and a source the change log can hold', () => {
    const many = Array.from({ length: 3 * MAX_PER_TRANSACTION }, (_, i) => due(1_000_000 + i))
    const batches = batchesOf(many)
    expect(batches.flat().map((s) => s.id)).toEqual(many.map((s) => s.id))
    for (const batch of batches) {
      expect(batch.length).toBeLessThanOrEqual(MAX_PER_TRANSACTION)
      expect(scheduleAudit(batch).source?.length).toBeLessThanOrEqual(256)
    }
  })

  it('names the creator as the actor, and the schedules and their approver in the source', () => {
    expect(scheduleAudit([due(12, { approved_by_actor: 'bob@example.com' })])).toEqual({
      actor: 'ann@example.com',
      declaredActor: null,
      source: 'schedule:12 approved by bob@example.com',
    })
    expect(scheduleAudit([due(12), due(13)]).source).toBe('schedule:12,13')
  })
})
