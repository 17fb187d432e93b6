import { type Flag, type Operation, patchFlag } from '@flagsync/protocol'
import type { ClientFlag } from './types.js'

/**
 * The local-first view: the server's flags with this client's queued flag
 * operations applied on top, in queue order, the way the receiver will apply
 * them. An operation the receiver would reject (update of a missing flag,
 * invalid changes) changes nothing here either. Pure.
 */
export function applyPending(
  server: ReadonlyMap<string, ClientFlag>,
  operations: readonly Operation[],
  collection = 'flags',
): Map<string, ClientFlag> {
  const view = new Map(server)
  for (const op of operations) {
    if (op.collection !== collection) continue
    if (op.action === 'insert') {
      view.set(op.recordId, normalize({ ...op.record, key: op.recordId }))
    } else if (op.action === 'update') {
      const existing = view.get(op.recordId)
      if (!existing) continue
      const patched = patchFlag(existing as Flag, op.changes)
      // Full (flag service) flags carry fields the flat patch schema does not know: merge those shallowly.
      if (patched) view.set(op.recordId, { ...existing, ...patched })
      else if (!isFlatFlag(existing))
        view.set(op.recordId, { ...existing, ...op.changes, key: op.recordId } as ClientFlag)
    } else {
      view.delete(op.recordId)
    }
  }
  return view
}

function normalize(record: Record<string, unknown>): ClientFlag {
  return {
    rollout_percentage: null,
    description: null,
    rules: [],
    ...record,
    is_enabled: record.is_enabled === true,
  } as unknown as ClientFlag
}

function isFlatFlag(flag: ClientFlag): boolean {
  return !('flag_type' in flag) && !('variants' in flag) && !('prerequisites' in flag)
}
