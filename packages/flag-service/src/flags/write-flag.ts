/**
 * The flag service's one write path for a flag: every REST write (POST, PATCH, DELETE, promote), every `/sync`
 * operation and every change request's approval goes through `writeFlag` (its own transaction) or `writeFlagIn`
 * (inside a transaction that does more: a sync batch, an approval). Both run the store's write core
 * (`writeFlagChange`: validate, three-way check, unchanged, approval gate, environment checks, write) with the
 * service's model and approval policy, read inside the transaction, and answer one `ServiceWriteResult`.
 *
 * ```ts
 * // A merge patch, as the PATCH route sends it (a scheduled change calls `writeFlagIn` with `review: 'approved'`):
 * const review = changeRequestFiler(actor, runtime.clock()) // files it where approval is required
 * const intent = { action: 'patch', key, patch, base } as const // base: If-Match, or undefined
 * const { result, revision } = await writeFlag(runtime, env, intent, { review, audit, caller: req })
 * // result.status: 'applied' | 'unchanged' (revision: the flag's revision now) | 'needs_approval' (result.request:
 * // the change request filed) | 'conflict' | 'not_found' | 'forbidden' | 'invalid'
 * if (result.status !== 'needs_approval') throwUnlessWritten(result) // a refusal as the REST error
 * ```
 */

import type { Issue } from '@flagsync/protocol'
import { HttpError, parseOr422 } from '@flagsync/server-kit'
import {
  type AuditContext,
  type Checked,
  type FlagChangeKind,
  type FlagModel,
  type FlagWriteIntent,
  type FlagWriteResult,
  type FlagWriter,
  type Gate,
  type Invalid,
  singleFlagConflict,
  writeFlagChange,
} from '@flagsync/store'
import { revisionIn, withoutRevision } from '../audit/flag-audit.js'
import { type Role, roleAtLeast } from '../auth/context.js'
import type { WriteCaller } from '../auth/verify-access.js'
import type { ServiceRuntime } from '../service-runtime.js'
import { approvalRequired, assertFitsEnvironment, assertNoneDepend, stagedEnvironmentFlags } from './checks.js'
import { assertCreatable } from './meta.js'
import { type FlagPatch, flagBodySchema, flagPatchSchema, mergeFlag, type ServiceFlag } from './model.js'

/** The environment a write goes to, and the caller's role in its project. */
export interface WriteTarget {
  id: string
  projectId: string
  name: string
  role: Role
}

/** A patch the approval gate sent for review, not staged. */
export type NeedsApproval = Extract<FlagWriteResult<ServiceFlag>, { status: 'needs_approval' }>

/** Files a patch for review in the write's transaction (`changeRequestFiler`) and returns the request. */
export type ReviewFiler<R> = (flags: FlagWriter, needs: NeedsApproval, environmentId: string) => Promise<R>

export interface WriteFlagOptions<R> {
  /**
   * Where approval is required, files a patch as a change request (`changeRequestFiler`, change-requests/file.ts); or
   * `'approved'`: the write is a change request's approval, past the gate. Only a patch is ever filed.
   */
  review?: ReviewFiler<R> | 'approved'
  /** The refused replacement in a 403's words (default `replacing a flag`). */
  replacing?: string
  /** The refused delete in a 403's words (default `deleting a flag`; archiving says `archiving a flag`). */
  removing?: string
  /** The write restores an archived flag: its key may be archived still (`restoreFlag` clears it in the same write). */
  restoring?: boolean
  /** The flag in a 422's words (default `flag`, or `flag after the patch`). */
  what?: string
}

/** The core's answer; a patch filed for review carries what its filer returned (the change request). */
export type ServiceWriteResult<R = unknown> =
  | Exclude<FlagWriteResult<ServiceFlag>, { status: 'needs_approval' }>
  | (NeedsApproval & { request: R })

/** `writeFlagIn` in its own transaction, with the flag's revision after the commit (applied or unchanged). */
export async function writeFlag<R>(
  runtime: ServiceRuntime,
  target: WriteTarget,
  intent: FlagWriteIntent,
  options: WriteFlagOptions<R> & {
    audit: AuditContext
    caller?: WriteCaller
    /** More of the same transaction once the flag is written (applied or unchanged): its metadata, say. */
    alongside?: (flags: FlagWriter, written: { key: string }) => Promise<unknown>
  },
): Promise<{ result: ServiceWriteResult<R>; revision: number | undefined }> {
  const { result, changes } = await runtime.commit(
    async (_trx, flags) => {
      const written = await writeFlagIn(flags, target, intent, options)
      if (options.alongside && (written.status === 'applied' || written.status === 'unchanged')) {
        await options.alongside(flags, written)
      }
      return written
    },
    options.audit,
    options.caller,
  )
  const before = result.status === 'applied' || result.status === 'unchanged' ? result.before : null
  return { result, revision: revisionIn(changes, target.id, intent.key, before?.revision ?? null) }
}

/** One flag write in the caller's transaction; a patch to be reviewed is filed as a change request here. */
export async function writeFlagIn<R>(
  flags: FlagWriter,
  target: WriteTarget,
  intent: FlagWriteIntent,
  options: WriteFlagOptions<R>,
): Promise<ServiceWriteResult<R>> {
  const what = options.what ?? (intent.action === 'patch' ? 'flag after the patch' : 'flag')
  const { review } = options
  if (intent.action === 'put' && !options.restoring)
    await assertCreatable(flags, target.projectId, intent.key, target.id)
  const result = await writeFlagChange(flags, target.id, intent, {
    model: serviceFlagModel,
    gate:
      review === 'approved'
        ? undefined
        : async (kind) =>
            approvalGate(kind, await approvalRequired(flags, target.id), target.role, target.name, options),
    fits: (key, candidate) => environmentFit(flags, target, key, candidate, what),
  })
  if (result.status !== 'needs_approval') return result
  if (review === undefined || review === 'approved') throw new Error('a patch to review, and no one to file it')
  return { ...result, request: await review(flags, result, target.id) }
}

/**
 * Who may change a flag where approval is required (`docs/flag-service-decisions.md`, "Flags and approval"): only a
 * patch can be reviewed, so a patch is filed for every role; replacing or deleting an existing flag needs the
 * project admin role; creating a new flag stays open. Pure: the setting is read in the write's transaction.
 */
export function approvalGate(
  kind: FlagChangeKind,
  approval: boolean,
  role: Role,
  environment: string,
  words: { replacing?: string; removing?: string } = {},
): Gate {
  if (!approval || kind === 'create') return 'apply'
  if (kind === 'patch') return 'review'
  if (roleAtLeast(role, 'admin')) return 'apply'
  const { replacing = 'replacing a flag', removing = 'deleting a flag' } = words
  return {
    forbidden:
      kind === 'delete'
        ? `${environment} requires approval: ${removing} needs the project admin role (a change request cannot delete)`
        : `${environment} requires approval: ${replacing} needs the project admin role; send a PATCH to file a change request`,
  }
}

/** The flag service's flags: `flagBodySchema` for a whole flag, `flagPatchSchema` and `mergeFlag` for a patch. */
const serviceFlagModel: FlagModel<ServiceFlag> = {
  parse: (record, key) => checked(() => parseOr422(flagBodySchema, withKey(withoutRevision(record), key), 'flag')),
  patch: (raw) => checked(() => parseOr422(flagPatchSchema, withoutRevision(raw), 'patch')),
  merge: (current, patch) => checked(() => mergeFlag(current, patch as FlagPatch)),
}

/** A record without its own key takes the write's (a sync operation's recordId); none when the write has none. */
function withKey(record: unknown, key: string): unknown {
  if (typeof record !== 'object' || record === null || Array.isArray(record) || key === '') return record
  return 'key' in record ? record : { ...record, key }
}

/** The model's 422s (`parseOr422`, `mergeFlag`) as the core's `invalid`, with the same words and issues. */
function checked<T>(run: () => T): Checked<T> {
  try {
    return { ok: true, value: run() }
  } catch (error) {
    const invalid = invalidOf(error, 'input')
    if (!invalid) throw error
    return { ok: false, invalid }
  }
}

function invalidOf(error: unknown, stage: Invalid['stage']): Invalid | null {
  if (!(error instanceof HttpError) || (error.code !== 'validation_failed' && error.code !== 'conflict')) return null
  const issues = (error.details.issues as Issue[] | undefined) ?? [{ path: '(root)', message: error.message }]
  const dependents = error.details.dependents as string[] | undefined
  return { message: error.message, issues, stage, ...(dependents ? { dependents } : {}) }
}

/** The candidate against its environment (prerequisites, cycles, segments); a delete against the flags needing it. */
async function environmentFit(
  flags: FlagWriter,
  target: WriteTarget,
  key: string,
  candidate: ServiceFlag | null,
  what: string,
): Promise<Invalid | null> {
  try {
    if (candidate) await assertFitsEnvironment(flags, target, candidate, what)
    else assertNoneDepend(key, await stagedEnvironmentFlags(flags, target.id))
    return null
  } catch (error) {
    const invalid = invalidOf(error, 'scope')
    if (!invalid) throw error
    return invalid
  }
}

const noFlag = (key: string) => new HttpError('not_found', `no flag ${JSON.stringify(key)} in this environment`)

/**
 * A refusal as the REST routes answer it: 409 with the receiver's conflict body, 404, 403, 422 naming the fields
 * (409 with `dependents` for a delete other flags need). `extra` goes into a conflict's body.
 */
export function throwUnlessWritten<R>(
  result: ServiceWriteResult<R>,
  extra: Record<string, unknown> = {},
): asserts result is Extract<ServiceWriteResult<R>, { status: 'applied' | 'unchanged' }> {
  switch (result.status) {
    case 'applied':
    case 'unchanged':
      return
    case 'conflict': {
      const { message, details } = singleFlagConflict(result.key, result.conflict, extra)
      throw new HttpError('conflict', message, details)
    }
    case 'not_found':
      throw noFlag(result.key)
    case 'forbidden':
      throw new HttpError('forbidden', result.reason)
    case 'invalid':
      if (result.dependents) throw new HttpError('conflict', result.message, { dependents: result.dependents })
      throw new HttpError('validation_failed', result.message, { issues: result.issues })
    case 'needs_approval':
      throw new Error('a change request was filed: answer it, not the flag')
  }
}
