import type { FlagPatch } from '../flags/model.js'
import { iso, isoOrNull } from '../records.js'
import type { ChangeRequestRow } from './rows.js'

/**
 * A change request as answered. `base_revision` is the flag revision it was
 * filed against; `stale` (pending requests only) says the flag changed since,
 * given its current revision (`undefined`: the flag is gone, null: not known).
 */
export const changeRequestJson = (row: ChangeRequestRow, currentRevision?: number | null) => ({
  id: Number(row.id),
  environment_id: row.environment_id,
  flag_key: row.flag_key,
  patch: JSON.parse(row.patch) as FlagPatch,
  requested_by: row.requested_by,
  status: row.status,
  reviewed_by: row.reviewed_by,
  reason: row.reason,
  created_at: iso(row.created_at),
  reviewed_at: isoOrNull(row.reviewed_at),
  base_revision: row.base_revision === null ? null : Number(row.base_revision),
  stale: row.status === 'pending' && isStale(row, currentRevision),
})

/** Whether the flag changed since the request was filed (deleted counts); requests without a base never are. */
function isStale(row: ChangeRequestRow, currentRevision: number | null | undefined): boolean {
  if (row.base_revision === null || currentRevision === null) return false
  return currentRevision === undefined || currentRevision !== Number(row.base_revision)
}
