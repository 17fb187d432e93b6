import { flagKeySchema } from '@flagsync/protocol'
import { HttpError, parseOr422 } from '@flagsync/server-kit'
import { type Request, type Response, Router } from 'express'
import type { Knex } from 'knex'
import { type Actor, actorOf } from '../audit/flag-audit.js'
import { authOf, environmentOf, requireProjectRole } from '../auth/guards.js'
import { assertFitsEnvironment } from '../flags/checks.js'
import { mergeFlag, type ServiceFlag, unprocessable } from '../flags/model.js'
import { allowOnly, jsonBodyFor, type RouterOptions } from '../http.js'
import { intId } from '../schemas.js'
import type { ServiceRuntime } from '../service-runtime.js'
import { noFlag } from './apply.js'
import {
  insertScheduleRow,
  listScheduleRows,
  type ScheduleRow,
  scheduleJson,
  scheduleRow,
  updateSchedule,
} from './rows.js'
import { createScheduleSchema, runAtOf, scheduleQuerySchema } from './schema.js'

type Handler = (req: Request, res: Response) => Promise<void>
/** Wakes the runner after a change to the table (create, approve, cancel). */
type Nudge = () => void

/** /api/environments/:env_id/flags/:key/schedules (after `loadEnvironment`): viewers list, editors create. */
export function createFlagSchedulesRouter(runtime: ServiceRuntime, nudge: Nudge, options: RouterOptions = {}): Router {
  const router = Router({ mergeParams: true })
  router.get('/', requireProjectRole('viewer'), listSchedules(runtime, 'flag'))
  router.post('/', requireProjectRole('editor'), ...jsonBodyFor(options), createSchedule(runtime, nudge))
  allowOnly(router, '/', 'GET, POST')
  return router
}

/** /api/environments/:env_id/schedules (after `loadEnvironment`): viewers list, editors cancel and approve. */
export function createEnvironmentSchedulesRouter(runtime: ServiceRuntime, nudge: Nudge): Router {
  const router = Router({ mergeParams: true })
  router.get('/', requireProjectRole('viewer'), listSchedules(runtime, 'environment'))
  router.delete('/:id', requireProjectRole('editor'), cancelSchedule(runtime, nudge))
  router.post('/:id/approve', requireProjectRole('editor'), approveSchedule(runtime, nudge))
  allowOnly(router, '/', 'GET')
  allowOnly(router, '/:id', 'DELETE')
  allowOnly(router, '/:id/approve', 'POST')
  return router
}

function keyOf(req: Request): string {
  const key = String(req.params.key)
  if (!flagKeySchema.safeParse(key).success) throw noFlag(key)
  return key
}

const send = (req: Request, res: Response, runtime: ServiceRuntime, row: ScheduleRow) => {
  res.json(scheduleJson(row, environmentOf(req).requireApproval, runtime.clock()))
}

// The patch is checked as a PATCH would be, against the flag as it is now; the flag's revision is the base of the
// conflict check when it runs. Nothing is stored unless all of it holds.
function createSchedule(runtime: ServiceRuntime, nudge: Nudge): Handler {
  return async (req, res) => {
    const env = environmentOf(req)
    const key = keyOf(req)
    const body = parseOr422(createScheduleSchema, req.body, 'schedule')
    const now = runtime.clock()
    const runAt = runAtOf(body.run_at, now)
    if (body.patch.key !== undefined && body.patch.key !== key) {
      // A PATCH's rule (the key may be repeated, not changed), named as this body's field.
      throw unprocessable('schedule', [
        { path: 'patch.key', message: `the key cannot change (is ${JSON.stringify(key)})` },
      ])
    }
    const actor = await actorOf(runtime.knex, authOf(req))
    const row = await runtime.write(
      async (trx, flags) => {
        const current = (await flags.get(key, env.id)) as ServiceFlag | undefined
        if (!current) throw noFlag(key)
        await assertFitsEnvironment(flags, env, mergeFlag(current, body.patch), 'flag after the patch')
        const base = (await flags.committed(key, env.id)).revision
        return insertSchedule(trx, { environmentId: env.id, key, patch: body.patch, runAt, actor, base, now })
      },
      undefined,
      req,
    )
    nudge()
    send(req, res, runtime, row)
  }
}

async function insertSchedule(
  trx: Knex,
  input: {
    environmentId: string
    key: string
    patch: object
    runAt: number
    actor: Actor
    base: number | null
    now: number
  },
): Promise<ScheduleRow> {
  const record = {
    environment_id: input.environmentId,
    flag_key: input.key,
    patch: JSON.stringify(input.patch),
    run_at: input.runAt,
    status: 'pending' as const,
    created_by: input.actor.label,
    created_by_actor: input.actor.name,
    created_by_user_id: input.actor.userId,
    created_by_key_id: input.actor.keyId,
    approved_by: null,
    approved_by_actor: null,
    approved_at: null,
    base_revision: input.base,
    created_at: input.now,
    applied_at: null,
    result: null,
  }
  return { id: await insertScheduleRow(trx, record), ...record }
}

// Soonest run_at first; `?status=` filters (422 for anything but the four statuses).
function listSchedules({ knex, clock }: ServiceRuntime, scope: 'flag' | 'environment'): Handler {
  return async (req, res) => {
    const { status } = parseOr422(scheduleQuerySchema, req.query, 'query')
    const env = environmentOf(req)
    const rows = await listScheduleRows(knex, env.id, { flagKey: scope === 'flag' ? keyOf(req) : undefined, status })
    const now = clock()
    res.json(rows.map((row) => scheduleJson(row, env.requireApproval, now)))
  }
}

const noSchedule = (raw: unknown) =>
  new HttpError('not_found', `no schedule ${JSON.stringify(String(raw))} in this environment`)
const notPending = (row: ScheduleRow) =>
  new HttpError('conflict', `schedule ${row.id} is ${row.status}, no longer pending`, { status: row.status })

async function findPending(trx: Knex, req: Request): Promise<ScheduleRow> {
  const id = typeof req.params.id === 'string' ? intId(req.params.id) : undefined
  if (id === undefined) throw noSchedule(req.params.id)
  const row = await scheduleRow(trx, environmentOf(req).id, id)
  if (!row) throw noSchedule(id)
  if (row.status !== 'pending') throw notPending(row)
  return row
}

// In the write lock, as the runner claims: a schedule is cancelled or applied, never both.
function cancelSchedule(runtime: ServiceRuntime, nudge: Nudge): Handler {
  return async (req, res) => {
    const actor = await actorOf(runtime.knex, authOf(req))
    const row = await runtime.write(
      async (trx) => {
        const found = await findPending(trx, req)
        const update = { status: 'cancelled' as const, result: JSON.stringify({ cancelled_by: actor.label }) }
        await updateSchedule(trx, found.id, update)
        return { ...found, ...update }
      },
      undefined,
      req,
    )
    nudge()
    send(req, res, runtime, row)
  }
}

// Someone other than the creator (another user, or another SDK key); once.
function approveSchedule(runtime: ServiceRuntime, nudge: Nudge): Handler {
  return async (req, res) => {
    const actor = await actorOf(runtime.knex, authOf(req))
    const row = await runtime.write(
      async (trx) => {
        const found = await findPending(trx, req)
        if (isCreator(found, actor)) {
          throw new HttpError('forbidden', 'a schedule must be approved by someone other than its creator')
        }
        if (found.approved_at !== null) {
          throw new HttpError('conflict', `schedule ${found.id} is approved already (by ${found.approved_by})`)
        }
        const update = { approved_by: actor.label, approved_by_actor: actor.name, approved_at: runtime.clock() }
        await updateSchedule(trx, found.id, update)
        return { ...found, ...update }
      },
      undefined,
      req,
    )
    nudge()
    send(req, res, runtime, row)
  }
}

const isCreator = (row: ScheduleRow, actor: Actor) =>
  (actor.userId !== null && Number(row.created_by_user_id) === actor.userId) ||
  (actor.keyId !== null && Number(row.created_by_key_id) === actor.keyId)
