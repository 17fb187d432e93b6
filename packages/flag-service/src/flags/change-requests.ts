import { HttpError, parseOr422 } from '@flagsync/server-kit'
import { Router } from 'express'
import type { Knex } from 'knex'
import type { AuthContext } from '../auth/context.js'
import { authOf, environmentOf, requireProjectRole } from '../auth/guards.js'
import { iso, isoOrNull } from '../records.js'
import { allowOnly, jsonBodyFor, noContent, type RouterOptions } from '../routes/common.js'
import { intId } from '../schemas.js'
import type { ServiceRuntime } from '../service-runtime.js'
import type { ServiceMigration } from '../tables.js'
import { assertFitsEnvironment } from './checks.js'
import {
  type ChangeRequestStatus,
  changeRequestQuerySchema,
  type FlagPatch,
  flagPatchSchema,
  mergeFlag,
  rejectSchema,
  type ServiceFlag,
} from './model.js'

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
}

export const changeRequestJson = (row: ChangeRequestRow) => ({
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
})

/** Who acts on a change request: a user (session or token) or an SDK key, and how they are named in it. */
export interface Actor {
  label: string
  userId: number | null
  keyId: number | null
  workspaceAdmin: boolean
}

export async function actorOf(knex: Knex, auth: AuthContext): Promise<Actor> {
  if (auth.user) {
    return { label: auth.user.email, userId: auth.user.id, keyId: null, workspaceAdmin: auth.user.role === 'admin' }
  }
  const keyId = auth.sdkKey?.id ?? 0
  const row = (await knex('flagsync_sdk_keys').where('id', keyId).first('prefix')) as { prefix: string } | undefined
  return { label: row?.prefix ?? `sdk key ${keyId}`, userId: null, keyId, workspaceAdmin: false }
}

const isRequester = (row: ChangeRequestRow, actor: Actor) =>
  (actor.userId !== null && Number(row.requested_by_user_id) === actor.userId) ||
  (actor.keyId !== null && Number(row.requested_by_key_id) === actor.keyId)

/** Files a pending change request (in the caller's write transaction) and returns it. */
export async function fileChangeRequest(
  trx: Knex,
  input: { environmentId: string; flagKey: string; patch: FlagPatch; actor: Actor; now: number },
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
  }
  const [inserted] = (await trx(CHANGE_REQUESTS_TABLE).insert(record, ['id'])) as Array<{ id: Num }>
  return { id: Number(inserted?.id), ...record }
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
  const { knex } = runtime
  const idOf = (raw: string | string[] | undefined) => {
    if (typeof raw !== 'string') throw noRequest(String(raw))
    const id = intId(raw)
    if (id === undefined) throw noRequest(String(raw))
    return id
  }
  const find = async (trx: Knex, environmentId: string, id: number) => {
    const row = (await trx(CHANGE_REQUESTS_TABLE).where({ id, environment_id: environmentId }).first()) as
      | ChangeRequestRow
      | undefined
    if (!row) throw noRequest(String(id))
    return row
  }

  router.get('/', requireProjectRole('viewer'), async (req, res) => {
    const { status } = parseOr422(changeRequestQuerySchema, { status: req.query.status }, 'query')
    const query = knex(CHANGE_REQUESTS_TABLE).where('environment_id', environmentOf(req).id).orderBy('id', 'desc')
    if (status) query.where('status', status)
    res.json(((await query.select('*')) as ChangeRequestRow[]).map(changeRequestJson))
  })

  router.get('/:id', requireProjectRole('viewer'), async (req, res) => {
    res.json(changeRequestJson(await find(knex, environmentOf(req).id, idOf(req.params.id))))
  })

  // Approve: applies the stored patch to the flag as it is now, in the transaction that marks the request approved.
  router.post('/:id/approve', requireProjectRole('editor'), async (req, res) => {
    const env = environmentOf(req)
    const id = idOf(req.params.id)
    const actor = await actorOf(knex, authOf(req))
    const flag = await runtime.write(async (trx, flags): Promise<ServiceFlag> => {
      const row = await find(trx, env.id, id)
      if (row.status !== 'pending') throw notPending(row)
      if (isRequester(row, actor)) {
        throw new HttpError('forbidden', 'a change request must be approved by someone other than its requester')
      }
      const current = (await flags.get(row.flag_key, env.id)) as ServiceFlag | undefined
      if (!current) {
        throw new HttpError(
          'conflict',
          `flag ${JSON.stringify(row.flag_key)} was deleted after this request was filed: reject or cancel it`,
        )
      }
      const patch = parseOr422(flagPatchSchema, JSON.parse(row.patch), 'stored patch')
      const merged = mergeFlag(current, patch)
      await assertFitsEnvironment(flags, env, merged, 'flag after the patch')
      flags.put(merged, env.id)
      await trx(CHANGE_REQUESTS_TABLE)
        .where('id', id)
        .update({ status: 'approved', reviewed_by: actor.label, reviewed_at: runtime.clock() })
      return merged
    })
    res.json(flag)
  })

  router.post('/:id/reject', requireProjectRole('editor'), ...body, async (req, res) => {
    const env = environmentOf(req)
    const id = idOf(req.params.id)
    const { reason } = parseOr422(rejectSchema, req.body, 'rejection')
    const actor = await actorOf(knex, authOf(req))
    await runtime.write(async (trx) => {
      const row = await find(trx, env.id, id)
      if (row.status !== 'pending') throw notPending(row)
      await trx(CHANGE_REQUESTS_TABLE)
        .where('id', id)
        .update({ status: 'rejected', reason: reason ?? null, reviewed_by: actor.label, reviewed_at: runtime.clock() })
    })
    noContent(res)
  })

  // Cancel: the requester or a workspace admin; to anyone else the request does not exist (404).
  router.delete('/:id', requireProjectRole('viewer'), async (req, res) => {
    const env = environmentOf(req)
    const id = idOf(req.params.id)
    const actor = await actorOf(knex, authOf(req))
    await runtime.write(async (trx) => {
      const row = await find(trx, env.id, id)
      if (!isRequester(row, actor) && !actor.workspaceAdmin) {
        throw new HttpError('not_found', `no change request ${id} of yours in this environment`)
      }
      if (row.status !== 'pending') throw notPending(row)
      await trx(CHANGE_REQUESTS_TABLE)
        .where('id', id)
        .update({ status: 'cancelled', reviewed_by: actor.label, reviewed_at: runtime.clock() })
    })
    noContent(res)
  })

  allowOnly(router, '/', 'GET')
  allowOnly(router, '/:id', 'GET, DELETE')
  allowOnly(router, '/:id/approve', 'POST')
  allowOnly(router, '/:id/reject', 'POST')
  return router
}
