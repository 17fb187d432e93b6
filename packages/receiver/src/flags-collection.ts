import { applyFlagPatch, type Flag, flagKeySchema, flagSchema, toIssues } from '@flagsync/protocol'
import type { CommittedFlag, FlagWriter } from '@flagsync/store'
import { type ConflictCheck, detectConflict } from '@flagsync/store'
import type { Collection, OperationMeta } from './collection.js'
import { OperationConflict } from './operation-conflict.js'
import { OperationRejected } from './operation-rejected.js'
import { quickFlag, quickPatch } from './quick-parse.js'

/** The built-in `flags` collection: `recordId` is the flag key; writes go to the flag store and its stream. */
export const flagsCollection: Collection = {
  prefetch: (store, bases) => store.readStatesAt(bases),

  async prepare({ writer }, recordIds, bases) {
    await writer.load(recordIds)
    // Records unchanged since their base (the usual offline edit) are answered from what `load`
    // read; the others from the change log, a few rows each (deeper ones outside the lock: `prefetch`).
    await writer.statesAt(bases)
  },

  async insert({ writer }, recordId, record, meta) {
    if (record.key !== undefined && record.key !== recordId) {
      throw new OperationRejected('record.key must equal recordId', [
        { path: 'record.key', message: `expected ${JSON.stringify(recordId)} (the recordId)` },
      ])
    }
    const quick = quickFlag(record, recordId)
    if (quick) {
      await checkBase(writer, recordId, 'insert', quick, meta)
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
    await checkBase(writer, recordId, 'insert', parsed.data, meta)
    writer.put(parsed.data)
  },

  async update({ writer }, recordId, changes, meta) {
    // `revision` is read-only (accepted and dropped by the patch), never a field that conflicts.
    const { revision: _readOnly, ...sets } = changes
    await checkBase(writer, recordId, 'update', sets, meta)
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

  async delete({ writer }, recordId, meta) {
    // A key no flag can have is a client's mistake (a wrong id), not a flag that is already gone.
    const key = flagKeySchema.safeParse(recordId)
    if (!key.success) throw new OperationRejected('recordId is not a flag key', toIssues(key.error, ['recordId']))
    await checkBase(writer, recordId, 'delete', null, meta)
    await writer.delete(recordId)
  },
}

/** A base revision this store never issued: the log cannot tell what the sender saw (see `detectConflict`). */
const UNISSUED = { flag: null, known: false } as const

/** Nobody wrote the record after the base revision (the first rule of the three-way check). */
function unchangedSince(committed: CommittedFlag, baseRevision: number): boolean {
  return committed.flag !== null && committed.revision !== null && committed.revision <= baseRevision
}

/**
 * The three-way check against the record as committed before this batch
 * (earlier operations of the same batch are the sender's own) and as it was
 * at the operation's base revision. Throws OperationConflict; returns when
 * the operation applies or merges (its fields go on top of the current flag).
 */
async function checkBase(
  writer: FlagWriter,
  recordId: string,
  action: ConflictCheck['action'],
  sets: Record<string, unknown> | null,
  meta: OperationMeta,
): Promise<void> {
  const baseRevision = meta.baseRevision
  if (baseRevision === undefined) return
  const [committed, storeRevision] = await Promise.all([writer.committed(recordId), writer.storeRevision()])
  const unissued = baseRevision > storeRevision
  if (!unissued && unchangedSince(committed, baseRevision)) return
  const base = unissued ? UNISSUED : await writer.stateAt(recordId, baseRevision)
  const verdict = detectConflict({
    action,
    sets,
    baseRevision,
    base: { record: base.flag, known: base.known },
    current: committed.flag,
    currentRevision: committed.revision,
    storeRevision,
  })
  if (verdict.outcome !== 'conflict') return
  throw new OperationConflict({
    kind: verdict.kind,
    fields: verdict.fields,
    base: base.flag,
    current: committed.flag,
    currentRevision: committed.revision,
    reason: verdict.reason,
  })
}
