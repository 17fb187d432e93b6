import type { Operation } from '@flagsync/protocol'
import { ApiError, api, type ErrorBody } from './api.js'
import { type BuiltFlag, recordOf } from './flag-draft.js'
import type { Environment, Flag } from './types.js'

/**
 * What a flag write came to: `saved` with the flags as the service stored
 * them, `requested` when an environment that requires approval filed a
 * change request instead, `queued` when it waits in the outbox (offline, or
 * online when the service did not answer for it in time: `reason` says why).
 */
export type FlagWriteOutcome =
  | { kind: 'saved'; flags: Array<{ envId: string; flag: Flag }> }
  | { kind: 'requested'; id: number }
  | { kind: 'queued'; reason?: string }

/** One answer of `POST /api/environments/:id/sync`, with the batch it answers and the outbox ids it held. */
export interface BatchAnswer {
  batchId: string
  status: number
  body: unknown
  /** The operations as sent (compacted: one per record). */
  operations: readonly Operation[]
  /** The local outbox ids of the queued operations the batch was cut from. */
  outboxIds: readonly number[]
}

/**
 * What the service decided about one queued operation: applied, filed as a
 * change request, a conflict (the sync client keeps it for the pending
 * panel), refused (403/422: discarded from the outbox, so the person fixes
 * the draft and saves again), or still `queued` with the reason.
 */
export type Delivery =
  | { kind: 'applied' }
  | { kind: 'requested'; id: number }
  | { kind: 'conflict'; reason: string }
  | { kind: 'refused'; status: number; body: ErrorBody }
  | { kind: 'queued'; reason: string | null }

/**
 * Queues flag operations in an environment's outbox (the sync client). With
 * `deliver`, sends them at once and resolves what the service answered for
 * this operation; without, resolves `queued` once it is stored.
 */
export interface Outbox {
  write(envId: string, operation: Operation, deliver: boolean): Promise<Delivery>
}

type Fields = Record<string, unknown>

/**
 * What `answer` says about the operation of `recordId` in it, or null when it
 * says nothing final: a conflict or a refusal of another operation of the
 * batch (the sync client sends the rest again, or the batch stays blocked).
 */
export function deliveryOf(answer: BatchAnswer, recordId: string): Delivery | null {
  const body = (answer.body && typeof answer.body === 'object' ? answer.body : {}) as Fields
  const { status } = answer
  if (status >= 200 && status < 300) {
    const filed = (body.change_requests as Array<{ recordId: string; id: number }> | undefined)?.find(
      (r) => r.recordId === recordId,
    )
    return filed ? { kind: 'requested', id: filed.id } : { kind: 'applied' }
  }
  if (status === 409) {
    const mine = (body.conflicts as Array<{ recordId: string; reason?: string }> | undefined)?.find(
      (c) => c.recordId === recordId,
    )
    return mine ? { kind: 'conflict', reason: mine.reason ?? String(body.error) } : null
  }
  const rejected = status >= 400 && status < 500 && status !== 408 && status !== 429
  const index = body.operationIndex
  if (!rejected || typeof index !== 'number' || answer.operations[index]?.recordId !== recordId) return null
  return { kind: 'refused', status, body: refusalOf(body, index) }
}

/**
 * The sync route's refusal in the REST route's words: the message without
 * its `operation N (update flags/key):` prefix and the first issue it repeats
 * at the end, and issue paths relative to the flag (`rollout_percentage`, not
 * `operations[0].changes.rollout_percentage`), so the editor names the field
 * as it does for any invalid save.
 */
function refusalOf(body: Fields, index: number): ErrorBody {
  const issues = (body.issues as ErrorBody['issues']) ?? []
  let error = String(body.error ?? 'refused').replace(/^operation \d+( \([^)]*\))?: /, '')
  const first = issues[0]
  const repeated = first ? `: ${first.path}: ${first.message}` : null
  if (repeated && error.endsWith(repeated)) error = error.slice(0, -repeated.length)
  const own = new RegExp(`^operations\\[${index}\\]\\.(?:changes|record)\\.?`)
  return { ...body, error, issues: issues.map((i) => ({ ...i, path: i.path.replace(own, '') || '(flag)' })) }
}

/** An edit the service answered with a conflict: someone changed the flag since the editor read it. */
export class FlagConflictError extends Error {
  readonly code = 'conflict'
  constructor(key: string, reason: string) {
    super(
      `${key} changed since you opened it: ${reason}. Your edit waits under "Queued edits": keep yours or take theirs there.`,
    )
    this.name = 'FlagConflictError'
  }
}

/** Where a write goes: the outbox, delivered at once unless `queued` (offline, or an editor that opened offline). */
export interface FlagWriteTarget {
  queued: boolean
  outbox: Outbox | null
}

const flagPath = (envId: string, key: string) => `/api/environments/${envId}/flags/${encodeURIComponent(key)}`

/** The outbox's answer for one operation, as the editor shows it: a conflict or a refusal is thrown. */
async function written(target: FlagWriteTarget, envId: string, operation: Operation): Promise<Delivery> {
  if (!target.outbox) throw new Error('Saving needs a connection: the outbox that queues edits offline is not open.')
  const delivery = await target.outbox.write(envId, operation, !target.queued)
  if (delivery.kind === 'conflict') throw new FlagConflictError(operation.recordId, delivery.reason)
  if (delivery.kind === 'refused') throw new ApiError(delivery.status, delivery.body)
  return delivery
}

/**
 * Every flag write of the dashboard, in one place: each is an operation in
 * the environment's outbox (the sync client), delivered to
 * `POST /api/environments/:id/sync` at once when online and kept until the
 * service is reachable when not, with the revision the editor saw as its
 * `baseRevision`. Online the answer for the operation comes back as the
 * outcome: the stored flag (read again), a change request's number, a
 * `FlagConflictError` (the conflict stays in the pending panel to resolve),
 * or the 403/422 as an `ApiError` naming the field (the operation is
 * discarded from the outbox: the draft is still open to fix and save again).
 *
 * Creating a flag online stays one `POST /api/projects/:id/flags`: it creates
 * the flag in every chosen environment in one transaction (all or, with a
 * 409/422, none), which per-environment sync batches cannot promise.
 */
export function flagWriter(target: FlagWriteTarget) {
  return {
    /** A merge patch of one flag, checked against `baseRevision` (a 409 when a field it sets changed since). */
    async update(envId: string, key: string, changes: Fields, baseRevision: number | undefined) {
      const op: Operation = { action: 'update', collection: 'flags', recordId: key, changes, ...base(baseRevision) }
      const delivery = await written(target, envId, op)
      return outcomeOf(envId, key, delivery)
    },

    /**
     * A new flag in each of `envs`: online in one request (with its tags and owner, `meta`), queued as an insert per
     * environment (the flag's definition only: the sync operation has no tags or owner).
     */
    async create(
      projectId: string,
      envs: readonly Environment[],
      flag: BuiltFlag,
      meta: { tags: string[]; owner: number | null } = { tags: [], owner: null },
    ): Promise<FlagWriteOutcome> {
      if (target.queued) {
        const record = { ...recordOf(flag), key: flag.key }
        for (const env of envs)
          await written(target, env.id, { action: 'insert', collection: 'flags', recordId: flag.key, record })
        return { kind: 'queued' }
      }
      const result = await api<{ created: Array<{ environment_id: string; flag: Flag }> }>(
        'POST',
        `/api/projects/${projectId}/flags`,
        { flag: { ...flag, ...meta }, environment_ids: envs.map((e) => e.id) },
      )
      return { kind: 'saved', flags: result.created.map((c) => ({ envId: c.environment_id, flag: c.flag })) }
    },

    /** Deletes the flag in one environment, checked against `revision` like an edit. */
    async remove(envId: string, key: string, revision: number | undefined): Promise<'deleted' | 'queued'> {
      const op: Operation = { action: 'delete', collection: 'flags', recordId: key, ...base(revision) }
      return (await written(target, envId, op)).kind === 'applied' ? 'deleted' : 'queued'
    },
  }
}

const base = (revision: number | undefined) => (revision === undefined ? {} : { baseRevision: revision })

async function outcomeOf(envId: string, key: string, delivery: Delivery): Promise<FlagWriteOutcome> {
  if (delivery.kind === 'requested') return { kind: 'requested', id: delivery.id }
  if (delivery.kind === 'queued')
    return delivery.reason ? { kind: 'queued', reason: delivery.reason } : { kind: 'queued' }
  // The sync route answers counts, not flags: the stored flag (its revision included) is read back. The edit is
  // saved even when that read fails; the live stream then brings the flag.
  const flag = await api<Flag>('GET', flagPath(envId, key)).catch(() => null)
  return { kind: 'saved', flags: flag ? [{ envId, flag }] : [] }
}
