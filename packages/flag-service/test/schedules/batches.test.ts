import { describe, expect, it } from 'vitest'
import { batchesOf, type DueSchedule, MAX_PER_TRANSACTION, scheduleAudit } from '../../src/schedules/due.js'

const due = (id: number, over: Partial<DueSchedule> = {}): DueSchedule => ({
  id,
  environment_id: 'env-a',
  flag_key: `f${id}`,
  ...over,
})

describe('due schedules in transactions', () => {
  it('shares a transaction between schedules of one environment, each on its own flag', () => {
    const batches = batchesOf([due(1), due(2, { environment_id: 'env-b' }), due(3), due(4, { flag_key: 'f1' }), due(5)])
    expect(batches.map((b) => b.map((s) => s.id))).toEqual([[1, 3], [2], [4, 5]])
  })

  it('keeps a transaction within its size', () => {
    const many = Array.from({ length: 3 * MAX_PER_TRANSACTION + 1 }, (_, i) => due(1_000_000 + i))
    const batches = batchesOf(many)
    expect(batches.flat().map((s) => s.id)).toEqual(many.map((s) => s.id))
    expect(batches.map((b) => b.length)).toEqual([MAX_PER_TRANSACTION, MAX_PER_TRANSACTION, MAX_PER_TRANSACTION, 1])
  })

  it('names the creator as the actor, and the schedule and its approver in the source', () => {
    const row = { id: '12', created_by_actor: 'ann@example.com', approved_by_actor: 'bob@example.com' }
    expect(scheduleAudit(row)).toEqual({
      actor: 'ann@example.com',
      declaredActor: null,
      source: 'schedule:12 approved by bob@example.com',
    })
    expect(scheduleAudit({ ...row, approved_by_actor: null }).source).toBe('schedule:12')
    // A source the change log can hold, whatever the approver's name.
    expect(scheduleAudit({ ...row, approved_by_actor: 'x'.repeat(300) }).source).toHaveLength(256)
  })
})
