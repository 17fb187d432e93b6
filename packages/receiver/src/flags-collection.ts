import { type Flag, flagKeySchema, toIssues } from '@flagsync/protocol'
import { type FlagWriteIntent, type FlagWriteResult, writeFlagChange } from '@flagsync/store'
import type { Collection } from './collection.js'
import { assertRecordKey, flatFlagModel } from './flat-flag-model.js'
import { OperationConflict } from './operation-conflict.js'
import { OperationRejected } from './operation-rejected.js'

/**
 * The built-in `flags` collection: `recordId` is the flag key; each operation is a write of the store's write core
 * (`writeFlagChange`, the flat API's model), which goes to the flag store and its stream. A plain insert (no base)
 * is staged without reading the flag: the bulk upsert of a sync client's batch.
 */
export const flagsCollection: Collection = {
  prefetch: (store, bases) => store.readStatesAt(bases),

  async prepare({ writer }, recordIds, bases) {
    await writer.load(recordIds)
    // Records unchanged since their base (the usual offline edit) are answered from what `load`
    // read; the others from the change log, a few rows each (deeper ones outside the lock: `prefetch`).
    await writer.statesAt(bases)
  },

  async insert({ writer }, recordId, record, meta) {
    assertRecordKey(record, recordId)
    const intent = { action: 'put', key: recordId, record, base: meta.baseRevision } as const
    answer(intent, await writeFlagChange(writer, '', intent, { model: flatFlagModel, blindPut: true }), record)
  },

  async update({ writer }, recordId, changes, meta) {
    const intent = { action: 'patch', key: recordId, patch: changes, base: meta.baseRevision } as const
    answer(intent, await writeFlagChange(writer, '', intent, { model: flatFlagModel }))
  },

  async delete({ writer }, recordId, meta) {
    // A key no flag can have is a client's mistake (a wrong id), not a flag that is already gone.
    const key = flagKeySchema.safeParse(recordId)
    if (!key.success) throw new OperationRejected('recordId is not a flag key', toIssues(key.error, ['recordId']))
    const intent = { action: 'delete', key: recordId, base: meta.baseRevision } as const
    answer(intent, await writeFlagChange(writer, '', intent, { model: flatFlagModel }))
  },
}

/**
 * A write's result as a batch operation: applied or unchanged go on (a delete of a flag already gone too); a
 * conflict is the 409's entry, an invalid record or patch the operation's 422.
 */
function answer(intent: FlagWriteIntent, result: FlagWriteResult<Flag>, record?: object): void {
  switch (result.status) {
    case 'conflict':
      throw new OperationConflict(result.conflict)
    case 'not_found':
      if (intent.action === 'delete') return
      throw new OperationRejected(`flag ${JSON.stringify(intent.key)} does not exist`, [
        { path: 'recordId', message: 'no flag with this key; insert it first' },
      ])
    case 'invalid': {
      const put = intent.action === 'put'
      // When the key came from the recordId, name the recordId as the culprit.
      const keyless = put && (record as { key?: unknown } | undefined)?.key === undefined
      const prefix = put ? 'record' : 'changes'
      const issues = result.issues.map((i) => {
        const path = i.path === '(root)' || i.path === '' ? prefix : `${prefix}.${i.path}`
        return { ...i, path: keyless && path === 'record.key' ? 'recordId' : path }
      })
      throw new OperationRejected(put ? 'invalid flag' : 'invalid changes', issues)
    }
    default:
      // applied, unchanged; no gate here, so never needs_approval or forbidden
      return
  }
}
