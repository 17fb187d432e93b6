import { HttpError } from '@flagsync/server-kit'
import { type FlagWriter, jsonEqual } from '@flagsync/store'
import { assertFitsEnvironment } from '../flags/checks.js'
import { checkFlagBase, flagConflictError } from '../flags/flag-conflicts.js'
import { type FlagPatch, mergeFlag, type ServiceFlag } from '../flags/model.js'

export const noFlag = (key: string) => new HttpError('not_found', `no flag ${JSON.stringify(key)} in this environment`)

/**
 * Writes a schedule's merge patch to its flag as a PATCH with a base would: the receiver's three-way check against
 * `base` (the flag's revision when the schedule was created: a field the patch sets that was changed meanwhile to
 * another value is a 409), the merge onto the flag as it is now, the environment's checks, then the write.
 * Throws the route's HttpError (404 deleted, 409 conflict, 422 no longer valid) before staging anything.
 * Resolves whether the flag changed.
 */
export async function writeScheduledPatch(
  flags: FlagWriter,
  environment: { id: string; projectId: string },
  key: string,
  patch: FlagPatch,
  base: number | null,
): Promise<boolean> {
  const current = (await flags.get(key, environment.id)) as ServiceFlag | undefined
  if (!current) throw noFlag(key)
  const merged = mergeFlag(current, patch)
  if (base !== null) {
    const sets: Record<string, unknown> = {}
    for (const field of Object.keys(patch))
      if (field !== 'key') sets[field] = (merged as Record<string, unknown>)[field]
    const conflict = await checkFlagBase(flags, environment.id, key, 'update', sets, base)
    if (conflict) throw flagConflictError(key, conflict)
  }
  await assertFitsEnvironment(flags, environment, merged, 'flag after the patch')
  if (jsonEqual(merged, current)) return false
  flags.put(merged, environment.id)
  return true
}
