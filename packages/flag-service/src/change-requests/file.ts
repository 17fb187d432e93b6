import type { Knex } from 'knex'
import type { Actor } from '../audit/flag-audit.js'
import type { FlagPatch } from '../flags/model.js'
import type { ReviewFiler } from '../flags/write-flag.js'
import { type ChangeRequestRow, insertChangeRequest } from './rows.js'

/** Files a pending change request (in the caller's write transaction) and returns it. */
async function fileChangeRequest(
  trx: Knex,
  input: {
    environmentId: string
    flagKey: string
    patch: FlagPatch
    actor: Actor
    now: number
    /** The flag's revision when filed (what the approver's staleness check compares with). */
    baseRevision: number | null
    /** The sync batch operation that filed it, if any. */
    batch?: { id: string; opIndex: number }
  },
): Promise<ChangeRequestRow> {
  const record = {
    environment_id: input.environmentId,
    flag_key: input.flagKey,
    patch: JSON.stringify(input.patch),
    requested_by: input.actor.label,
    requested_by_user_id: input.actor.userId,
    requested_by_key_id: input.actor.keyId,
    status: 'pending' as const,
    reviewed_by: null,
    reason: null,
    created_at: input.now,
    reviewed_at: null,
    base_revision: input.baseRevision,
    batch_id: input.batch?.id ?? null,
    op_index: input.batch?.opIndex ?? null,
  }
  return { id: await insertChangeRequest(trx, record, input.now), ...record }
}

/**
 * Files a patch the approval gate sent for review (`writeFlag`'s `review`) in the write's transaction, against
 * the flag's revision then, by `actor`, from a sync batch operation if any.
 */
export function changeRequestFiler(
  actor: Actor,
  now: number,
  batch?: { id: string; opIndex: number },
): ReviewFiler<ChangeRequestRow> {
  return (flags, needs, environmentId) =>
    fileChangeRequest(flags.trx, {
      environmentId,
      flagKey: needs.key,
      patch: needs.patch as FlagPatch,
      actor,
      now,
      baseRevision: needs.before.revision,
      batch,
    })
}
