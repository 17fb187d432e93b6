import { HttpError } from '@flagsync/server-kit'
import type { FlagWriter } from '@flagsync/store'
import type { FlagPatch } from '../flags/model.js'
import { throwUnlessWritten, writeFlagIn } from '../flags/write-flag.js'

export const noFlag = (key: string) => new HttpError('not_found', `no flag ${JSON.stringify(key)} in this environment`)

/**
 * Writes a schedule's merge patch to its flag through the flag service's one write path, as a PATCH with a base:
 * the three-way check against `base` (the flag's revision when the schedule was created: a field the patch sets
 * that was changed meanwhile to another value is a conflict), the merge onto the flag as it is now, the
 * environment's checks, then the write. The schedule's own approval stands in for the change-request gate.
 * Throws the PATCH route's HttpError (404 deleted, 409 conflict, 422 no longer valid) with nothing staged.
 * Resolves whether the flag changed.
 */
export async function writeScheduledPatch(
  flags: FlagWriter,
  environment: { id: string; projectId: string; name: string },
  key: string,
  patch: FlagPatch,
  base: number | null,
): Promise<boolean> {
  const target = { ...environment, role: 'editor' as const }
  const intent = { action: 'patch' as const, key, patch, ...(base === null ? {} : { base }) }
  const result = await writeFlagIn(flags, target, intent, { review: 'approved' })
  throwUnlessWritten(result)
  return result.status === 'applied'
}
