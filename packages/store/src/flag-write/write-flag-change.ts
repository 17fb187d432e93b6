import { jsonEqual } from '@flagsync/protocol'
import type { FlagWriter } from '../flag-writer.js'
import type { StoredFlag } from '../types.js'
import { checkFlagBase, unchangedSinceBase } from './check-base.js'
import { conflictAction, shapeWrite } from './shape-write.js'
import type { FlagWriteIntent, FlagWriteResult, FlagWriteRules } from './write-types.js'

/**
 * The flag write core, in the caller's write transaction (`FlagStore.write`: the revision lock, the change log and
 * audit columns at commit, the change feed after it). In this order, for every server and wire:
 * 1. validate the record or patch and build the candidate (`shapeWrite`, pure);
 * 2. with a base, the three-way check (`checkFlagBase`) → `conflict`;
 * 3. a patch or delete of a flag that does not exist → `not_found`;
 * 4. a candidate that reads exactly like the flag → `unchanged` (nothing filed, staged or recorded);
 * 5. the gate, read inside the transaction (approval, role) → `forbidden`;
 * 6. the candidate against the rest of its scope → `invalid`;
 * 7. the gate's `review` → `needs_approval` (the adapter files it), else staged → `applied`.
 */
export async function writeFlagChange<F extends StoredFlag>(
  writer: FlagWriter,
  scope: string,
  intent: FlagWriteIntent,
  rules: FlagWriteRules<F>,
): Promise<FlagWriteResult<F>> {
  const { key } = intent
  const blind = intent.action === 'put' && rules.blindPut === true && intent.base === undefined && !rules.gate
  const current = blind ? undefined : ((await writer.get(key, scope)) as F | undefined)
  const shaped = shapeWrite(intent, current, rules.model)
  if (!shaped.ok) return { status: 'invalid', key, ...shaped.invalid }
  const { kind, candidate, sets } = shaped
  // Loaded by `writer.get` above (or a batch's `load`), so the usual check (unchanged since the base) awaits nothing.
  let before = blind ? undefined : writer.committedIfLoaded(key, scope)
  if (intent.base !== undefined && !(before && unchangedSinceBase(before, intent.base, writer.storeRevision()))) {
    const conflict = await checkFlagBase(writer, scope, key, conflictAction(intent.action), sets, intent.base)
    if (conflict) return { status: 'conflict', key, conflict }
  }
  if (candidate === undefined || (candidate === null && !current)) return { status: 'not_found', key }
  if (blind) {
    writer.put(candidate as F, scope)
    return { status: 'applied', key, kind, flag: candidate, before: null }
  }
  before ??= await writer.committed(key, scope)
  if (candidate && current && jsonEqual(candidate, current)) return { status: 'unchanged', key, flag: current, before }
  const gate = rules.gate ? await rules.gate(kind) : 'apply'
  if (typeof gate === 'object') return { status: 'forbidden', key, reason: gate.forbidden }
  const unfit = rules.fits ? await rules.fits(key, candidate) : null
  if (unfit) return { status: 'invalid', key, ...unfit }
  if (gate === 'review') {
    if (intent.action !== 'patch' || !candidate) throw new Error(`only a patch can be filed for review (${kind})`)
    return { status: 'needs_approval', key, patch: shaped.patch, flag: candidate, before }
  }
  if (candidate) writer.put(candidate, scope)
  else await writer.delete(key, scope)
  return { status: 'applied', key, kind, flag: candidate, before }
}
