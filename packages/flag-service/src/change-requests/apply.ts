import { HttpError } from '@flagsync/server-kit'
import type { FlagWriter } from '@flagsync/store'
import { throwUnlessWritten, type WriteTarget, writeFlagIn } from '../flags/write-flag.js'
import type { ChangeRequestRow } from './rows.js'

/**
 * The stored patch as a PATCH of the flag as it is now, with the filing revision as the base unless `force`: a
 * field it sets that was changed meanwhile to another value is a 409 (the receiver's body, `stale: true`); a flag
 * deleted since a 409; a patch no longer valid a 422. A patch that meanwhile changes nothing is approved and
 * records nothing.
 */
export async function applyRequest(flags: FlagWriter, env: WriteTarget, row: ChangeRequestRow, force: boolean) {
  const base = row.base_revision === null || force ? undefined : Number(row.base_revision)
  const written = await writeFlagIn(
    flags,
    env,
    { action: 'patch', key: row.flag_key, patch: JSON.parse(row.patch), base },
    { review: 'approved' },
  )
  if (written.status === 'not_found' || (written.status === 'conflict' && written.conflict.kind === 'deleted')) {
    throw new HttpError(
      'conflict',
      `flag ${JSON.stringify(row.flag_key)} was deleted after this request was filed: reject or cancel it`,
    )
  }
  throwUnlessWritten(written, { stale: true, change_request_id: Number(row.id) })
  return written
}
