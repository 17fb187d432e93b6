import { HttpError, parseOr422 } from '@flagsync/server-kit'
import type { Request } from 'express'
import { type Actor, actorOf, auditOf, flagJson, revisionIn } from '../audit/flag-audit.js'
import { authOf, environmentOf } from '../auth/guards.js'
import { approveSchema, rejectSchema, type ServiceFlag } from '../flags/model.js'
import { noContent } from '../http.js'
import type { ServiceRuntime } from '../service-runtime.js'
import { applyRequest } from './apply.js'
import { type ChangeRequestHandler, requestIdOf } from './request-id.js'
import { type ChangeRequestRow, findChangeRequest, recordDecision } from './rows.js'

const isRequester = (row: ChangeRequestRow, actor: Actor) =>
  (actor.userId !== null && Number(row.requested_by_user_id) === actor.userId) ||
  (actor.keyId !== null && Number(row.requested_by_key_id) === actor.keyId)

const notPending = (row: ChangeRequestRow) =>
  new HttpError('conflict', `change request ${row.id} is ${row.status}, no longer pending`, { status: row.status })

// Approve: applies the stored patch to the flag as it is now, in the transaction that marks the request approved,
// through the one flag write path (past the approval gate: this is the review). A stale request (its flag changed
// since filing) whose fields were changed meanwhile: 409 unless `force`.
export function approveRequest(runtime: ServiceRuntime): ChangeRequestHandler {
  return async (req, res) => {
    const env = environmentOf(req)
    const id = requestIdOf(req.params.id)
    const force = forceOf(req)
    const actor = await actorOf(runtime.knex, authOf(req))
    const audit = await auditOf(runtime.knex, req, `change-request:${id}`)
    const { result: written, changes } = await runtime.commit(
      async (trx, flags) => {
        const row = await findChangeRequest(trx, env.id, id)
        if (row.status !== 'pending') throw notPending(row)
        if (isRequester(row, actor)) {
          throw new HttpError('forbidden', 'a change request must be approved by someone other than its requester')
        }
        const written = await applyRequest(flags, env, row, force)
        await recordDecision(trx, id, { status: 'approved', reviewedBy: actor.label, at: runtime.clock() })
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

export function rejectRequest(runtime: ServiceRuntime): ChangeRequestHandler {
  return async (req, res) => {
    const env = environmentOf(req)
    const id = requestIdOf(req.params.id)
    const { reason } = parseOr422(rejectSchema, req.body, 'rejection')
    const actor = await actorOf(runtime.knex, authOf(req))
    await runtime.write(
      async (trx) => {
        const row = await findChangeRequest(trx, env.id, id)
        if (row.status !== 'pending') throw notPending(row)
        const at = runtime.clock()
        await recordDecision(trx, id, { status: 'rejected', reason: reason ?? null, reviewedBy: actor.label, at })
      },
      undefined,
      req,
    )
    noContent(res)
  }
}

// Cancel: the requester or a workspace admin; to anyone else the request does not exist (404).
export function cancelRequest(runtime: ServiceRuntime): ChangeRequestHandler {
  return async (req, res) => {
    const env = environmentOf(req)
    const id = requestIdOf(req.params.id)
    const actor = await actorOf(runtime.knex, authOf(req))
    await runtime.write(
      async (trx) => {
        const row = await findChangeRequest(trx, env.id, id)
        if (!isRequester(row, actor) && !actor.workspaceAdmin) {
          throw new HttpError('not_found', `no change request ${id} of yours in this environment`)
        }
        if (row.status !== 'pending') throw notPending(row)
        await recordDecision(trx, id, { status: 'cancelled', reviewedBy: actor.label, at: runtime.clock() })
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
