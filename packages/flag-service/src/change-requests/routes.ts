import { HttpError, parseOr422 } from '@flagsync/server-kit'
import { type FlagWriter, TABLES } from '@flagsync/store'
import { type Request, type Response, Router } from 'express'
import type { Knex } from 'knex'
import { authOf, environmentOf, requireProjectRole } from '../auth/guards.js'
import { iso, isoOrNull } from '../records.js'
import { allowOnly, jsonBodyFor, noContent, type RouterOptions } from '../routes/common.js'
import { intId } from '../schemas.js'
import type { ServiceRuntime } from '../service-runtime.js'
import type { ServiceMigration } from '../tables.js'
import { emitChangeRequestEvent } from '../webhooks/change-request-events.js'
import { type Actor, actorOf, auditOf, flagJson, revisionIn } from './flag-audit.js'
import {
  approveSchema,
  type ChangeRequestStatus,
  changeRequestQuerySchema,
  type FlagPatch,
  rejectSchema,
  type ServiceFlag,
} from './model.js'
import { type ReviewFiler, throwUnlessWritten, type WriteTarget, writeFlagIn } from './write-flag.js'

export const CHANGE_REQUESTS_TABLE = 'flagsync_change_requests'

export const changeRequestMigration: ServiceMigration = {
  name: '0100_change_requests',
  async up(knex) {
    await knex.schema.createTable(CHANGE_REQUESTS_TABLE, (t) => {
      t.increments('id').primary()
      t.string('environment_id', 36).notNullable().references('id').inTable('flagsync_environments').onDelete('CASCADE')
      t.string('flag_key', 100).notNullable()
      t.text('patch').notNullable() // the validated merge patch, as JSON
      t.string('requested_by', 254).notNullable() // the requester's email (or an SDK key's display prefix)
      // Who may not approve and may cancel: the requesting user, or the requesting SDK key.
      t.integer('requested_by_user_id').nullable().references('id').inTable('flagsync_users').onDelete('SET NULL')
      t.integer('requested_by_key_id').nullable()
      t.string('status', 16).notNullable()
      t.string('reviewed_by', 254).nullable()
      t.text('reason').nullable()
      t.bigInteger('created_at').notNullable()
      t.bigInteger('reviewed_at').nullable()
      t.index(['environment_id', 'status'])
    })
  },
}

/**
 * The flag revision a request was filed against (approval of a
 * request whose flag changed since is a 409 unless forced; lists mark it
 * stale), and the sync batch operation that filed it (a replayed batch
 * answers the same request ids). Requests filed before have none: never stale.
 */
export const changeRequestBaseMigration: ServiceMigration = {
  name: '0101_change_request_base',
  async up(knex) {
    await knex.schema.alterTable(CHANGE_REQUESTS_TABLE, (t) => {
      t.bigInteger('base_revision').nullable()
      t.string('batch_id', 128).nullable()
      t.integer('op_index').nullable()
      t.index(['batch_id'])
    })
  },
}

type Num = number | string

export interface ChangeRequestRow {
  id: Num
  environment_id: string
  flag_key: string
  patch: string
  requested_by: string
  requested_by_user_id: Num | null
  requested_by_key_id: Num | null
  status: ChangeRequestStatus
  reviewed_by: string | null
  reason: string | null
  created_at: Num
  reviewed_at: Num | null
  base_revision: Num | null
  batch_id: string | null
  op_index: Num | null
}

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

/** The current revision of each listed flag of an environment (absent: the flag does not exist). */
async function flagRevisions(knex: Knex, environmentId: string, keys: string[]): Promise<Map<string, number>> {
  const out = new Map<string, number>()
  const unique = [...new Set(keys)]
  for (let i = 0; i < unique.length; i += 500) {
    const rows = (await knex(TABLES.flags)
      .where('scope', environmentId)
      .whereIn('key', unique.slice(i, i + 500))
      .select('key', 'revision')) as Array<{ key: string; revision: Num }>
    for (const row of rows) out.set(row.key, Number(row.revision))
  }
  return out
}

const isRequester = (row: ChangeRequestRow, actor: Actor) =>
  (actor.userId !== null && Number(row.requested_by_user_id) === actor.userId) ||
  (actor.keyId !== null && Number(row.requested_by_key_id) === actor.keyId)

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
  const [inserted] = (await trx(CHANGE_REQUESTS_TABLE).insert(record, ['id'])) as Array<{ id: Num }>
  await emitChangeRequestEvent(trx, 'change_request.created', Number(inserted?.id), input.now)
  return { id: Number(inserted?.id), ...record }
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

const noRequest = (raw: string) =>
  new HttpError('not_found', `no change request ${JSON.stringify(raw)} in this environment`)
const notPending = (row: ChangeRequestRow) =>
  new HttpError('conflict', `change request ${row.id} is ${row.status}, no longer pending`, { status: row.status })

/**
 * /api/environments/:env_id/change-requests (after `loadEnvironment`).
 * Viewers list and read; editors approve and reject; the requester or a
 * workspace admin cancels.
 */
export function createChangeRequestsRouter(runtime: ServiceRuntime, options: RouterOptions = {}): Router {
  const router = Router({ mergeParams: true })
  const body = jsonBodyFor(options)
  router.get('/', requireProjectRole('viewer'), listRequests(runtime))
  router.get('/:id', requireProjectRole('viewer'), getRequest(runtime))
  router.post('/:id/approve', requireProjectRole('editor'), ...body, approveRequest(runtime))
  router.post('/:id/reject', requireProjectRole('editor'), ...body, rejectRequest(runtime))
  router.delete('/:id', requireProjectRole('viewer'), cancelRequest(runtime))
  allowOnly(router, '/', 'GET')
  allowOnly(router, '/:id', 'GET, DELETE')
  allowOnly(router, '/:id/approve', 'POST')
  allowOnly(router, '/:id/reject', 'POST')
  return router
}

type ChangeRequestHandler = (req: Request, res: Response) => Promise<void>

function idOf(raw: string | string[] | undefined): number {
  if (typeof raw !== 'string') throw noRequest(String(raw))
  const id = intId(raw)
  if (id === undefined) throw noRequest(String(raw))
  return id
}

async function find(trx: Knex, environmentId: string, id: number): Promise<ChangeRequestRow> {
  const row = (await trx(CHANGE_REQUESTS_TABLE).where({ id, environment_id: environmentId }).first()) as
    | ChangeRequestRow
    | undefined
  if (!row) throw noRequest(String(id))
  return row
}

function listRequests({ knex }: ServiceRuntime): ChangeRequestHandler {
  return async (req, res) => {
    const { status } = parseOr422(changeRequestQuerySchema, { status: req.query.status }, 'query')
    const query = knex(CHANGE_REQUESTS_TABLE).where('environment_id', environmentOf(req).id).orderBy('id', 'desc')
    if (status) query.where('status', status)
    const rows = (await query.select('*')) as ChangeRequestRow[]
    const revisions = await flagRevisions(
      knex,
      environmentOf(req).id,
      rows.map((r) => r.flag_key),
    )
    res.json(rows.map((row) => changeRequestJson(row, revisions.get(row.flag_key))))
  }
}

function getRequest({ knex }: ServiceRuntime): ChangeRequestHandler {
  return async (req, res) => {
    const env = environmentOf(req)
    const row = await find(knex, env.id, idOf(req.params.id))
    res.json(changeRequestJson(row, (await flagRevisions(knex, env.id, [row.flag_key])).get(row.flag_key)))
  }
}

// Approve: applies the stored patch to the flag as it is now, in the transaction that marks the request approved,
// through the one flag write path (past the approval gate: this is the review). A stale request (its flag changed
// since filing) whose fields were changed meanwhile: 409 unless `force`.
function approveRequest(runtime: ServiceRuntime): ChangeRequestHandler {
  return async (req, res) => {
    const env = environmentOf(req)
    const id = idOf(req.params.id)
    const force = forceOf(req)
    const actor = await actorOf(runtime.knex, authOf(req))
    const audit = await auditOf(runtime.knex, req, `change-request:${id}`)
    const { result: written, changes } = await runtime.commit(
      async (trx, flags) => {
        const row = await find(trx, env.id, id)
        if (row.status !== 'pending') throw notPending(row)
        if (isRequester(row, actor)) {
          throw new HttpError('forbidden', 'a change request must be approved by someone other than its requester')
        }
        const written = await applyRequest(flags, env, row, force)
        await trx(CHANGE_REQUESTS_TABLE)
          .where('id', id)
          .update({ status: 'approved', reviewed_by: actor.label, reviewed_at: runtime.clock() })
        await emitChangeRequestEvent(trx, 'change_request.approved', id, runtime.clock())
        return written
      },
      audit,
      req,
    )
    const flag = written.flag as ServiceFlag
    const revision = revisionIn(changes, env.id, flag.key, written.before?.revision ?? null)
    res.type('application/json').send(revision === undefined ? JSON.stringify(flag) : flagJson(flag, revision))
  }
}

/**
 * The stored patch as a PATCH of the flag as it is now, with the filing revision as the base unless `force`: a
 * field it sets that was changed meanwhile to another value is a 409 (the receiver's body, `stale: true`); a flag
 * deleted since a 409; a patch no longer valid a 422. A patch that meanwhile changes nothing is approved and
 * records nothing.
 */
async function applyRequest(flags: FlagWriter, env: WriteTarget, row: ChangeRequestRow, force: boolean) {
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

function rejectRequest(runtime: ServiceRuntime): ChangeRequestHandler {
  return async (req, res) => {
    const env = environmentOf(req)
    const id = idOf(req.params.id)
    const { reason } = parseOr422(rejectSchema, req.body, 'rejection')
    const actor = await actorOf(runtime.knex, authOf(req))
    await runtime.write(
      async (trx) => {
        const row = await find(trx, env.id, id)
        if (row.status !== 'pending') throw notPending(row)
        await trx(CHANGE_REQUESTS_TABLE)
          .where('id', id)
          .update({
            status: 'rejected',
            reason: reason ?? null,
            reviewed_by: actor.label,
            reviewed_at: runtime.clock(),
          })
        await emitChangeRequestEvent(trx, 'change_request.rejected', id, runtime.clock())
      },
      undefined,
      req,
    )
    noContent(res)
  }
}

// Cancel: the requester or a workspace admin; to anyone else the request does not exist (404).
function cancelRequest(runtime: ServiceRuntime): ChangeRequestHandler {
  return async (req, res) => {
    const env = environmentOf(req)
    const id = idOf(req.params.id)
    const actor = await actorOf(runtime.knex, authOf(req))
    await runtime.write(
      async (trx) => {
        const row = await find(trx, env.id, id)
        if (!isRequester(row, actor) && !actor.workspaceAdmin) {
          throw new HttpError('not_found', `no change request ${id} of yours in this environment`)
        }
        if (row.status !== 'pending') throw notPending(row)
        await trx(CHANGE_REQUESTS_TABLE)
          .where('id', id)
          .update({ status: 'cancelled', reviewed_by: actor.label, reviewed_at: runtime.clock() })
        await emitChangeRequestEvent(trx, 'change_request.cancelled', id, runtime.clock())
      },
      undefined,
      req,
    )
    noContent(res)
  }
}

/**
 * `force` from `?force=true` or the body `{force: true}` (422 for anything
 * else). Both may be sent if they agree; `?force=true` with `{force: false}`
 * (or the reverse) is a 422, as If-Match with another base_revision is:
 * which one was meant cannot be told, and guessing `true` overwrites.
 */
function forceOf(req: Request): boolean {
  const { force: inBody } = parseOr422(approveSchema, req.body, 'approval')
  const raw = req.query.force
  if (raw !== undefined && raw !== 'true' && raw !== 'false') {
    throw new HttpError('validation_failed', 'invalid query: force: must be true or false', {
      issues: [{ path: 'force', message: 'must be true or false' }],
    })
  }
  const inQuery = raw === undefined ? undefined : raw === 'true'
  if (inBody !== undefined && inQuery !== undefined && inBody !== inQuery) {
    const message = `differs from ?force=${raw}; send one of them`
    throw new HttpError('validation_failed', `invalid approval: force: ${message}`, {
      issues: [{ path: 'force', message }],
    })
  }
  return inBody ?? inQuery ?? false
}
