import type { Flag } from '@flagsync/protocol'

// Builders of sync-batch operations for tests that post raw batches (no client).

/** A flag record with every field, enabled and without rules; `extra` overrides or adds fields. */
export const fullFlag = (key: string, extra: Record<string, unknown> = {}): Flag =>
  ({ key, is_enabled: true, rollout_percentage: null, description: null, rules: [], ...extra }) as Flag

export const insert = (recordId: string, record: Record<string, unknown>, collection = 'flags') => ({
  action: 'insert',
  collection,
  recordId,
  record,
})
export const update = (recordId: string, changes: Record<string, unknown>, collection = 'flags') => ({
  action: 'update',
  collection,
  recordId,
  changes,
})
export const remove = (recordId: string, collection = 'flags') => ({ action: 'delete', collection, recordId })

let counter = 0
/** A batch with a batch id unique across processes and runs (tests may share a database). */
export const batch = (operations: unknown[], batchId = `batch-${process.pid}-${Date.now()}-${++counter}`) => ({
  batchId,
  operations,
})
