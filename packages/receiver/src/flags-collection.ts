import { applyFlagPatch, type Flag, flagSchema, toIssues } from '@flagsync/protocol'
import type { Collection } from './collection.js'
import { OperationRejected } from './operation-rejected.js'
import { quickFlag, quickPatch } from './quick-parse.js'

/** The built-in `flags` collection: `recordId` is the flag key; writes go to the flag store and its stream. */
export const flagsCollection: Collection = {
  async prepare({ writer }, recordIds) {
    await writer.load(recordIds)
  },

  async insert({ writer }, recordId, record) {
    if (record.key !== undefined && record.key !== recordId) {
      throw new OperationRejected('record.key must equal recordId', [
        { path: 'record.key', message: `expected ${JSON.stringify(recordId)} (the recordId)` },
      ])
    }
    const quick = quickFlag(record, recordId)
    if (quick) {
      writer.put(quick)
      return
    }
    const parsed = flagSchema.safeParse({ ...record, key: recordId })
    if (!parsed.success) {
      // When the key came from the recordId, name the recordId as the culprit.
      const issues = toIssues(parsed.error, ['record']).map((i) =>
        i.path === 'record.key' && record.key === undefined ? { ...i, path: 'recordId' } : i,
      )
      throw new OperationRejected('invalid flag', issues)
    }
    writer.put(parsed.data)
  },

  async update({ writer }, recordId, changes) {
    const existing = (await writer.get(recordId)) as Flag | undefined
    if (!existing) {
      throw new OperationRejected(`flag ${JSON.stringify(recordId)} does not exist`, [
        { path: 'recordId', message: 'no flag with this key; insert it first' },
      ])
    }
    const quick = quickPatch(existing, changes)
    if (quick) {
      writer.put(quick)
      return
    }
    const result = applyFlagPatch(existing, changes)
    if (!result.ok) {
      throw new OperationRejected(
        'invalid changes',
        result.issues.map((i) => ({ ...i, path: `changes.${i.path}` })),
      )
    }
    writer.put(result.flag)
  },

  async delete({ writer }, recordId) {
    await writer.delete(recordId)
  },
}
