import { flagKeySchema } from '@flagsync/protocol'
import { baseRevisionOf, HttpError, parseOr422 } from '@flagsync/server-kit'
import { type Request, type Response, Router } from 'express'
import { actorOf, auditOf, flagJson, revisionIn } from '../audit/flag-audit.js'
import { sendFlagHistory } from '../audit/routes.js'
import { authOf, environmentOf, requireProjectRole } from '../auth/guards.js'
import { changeRequestFiler } from '../change-requests/file.js'
import { changeRequestJson } from '../change-requests/json.js'
import { allowOnly, jsonBodyFor, noContent, type RouterOptions } from '../http.js'
import type { ServiceRuntime } from '../service-runtime.js'
import { flagListQueryOf, type LifecycleScope, listArchived, listLive, readLive } from './lifecycle.js'
import { applyMeta, splitMeta } from './meta.js'
import { promoteSchema, type ServiceFlag } from './model.js'
import { promoteIn, promotionAuditOf, promotionOf } from './promote.js'
import { flagRow, listFlagRows } from './queries.js'
import { DEFAULT_STALE_AFTER_DAYS } from './stale.js'
import { throwUnlessWritten, writeFlag } from './write-flag.js'

const noFlag = (key: string) => new HttpError('not_found', `no flag ${JSON.stringify(key)} in this environment`)

/** The `:key` of the path; a key outside the key alphabet cannot exist, so it is a 404 without a query. */
function keyOf(req: Request): string {
  const key = String(req.params.key)
  if (!flagKeySchema.safeParse(key).success) throw noFlag(key)
  return key
}

/**
 * /api/environments/:env_id/flags (after `loadEnvironment`): viewers read
 * (segment references unexpanded), editors write. Every write validates the
 * flag against its environment in the write transaction.
 */
export function createEnvironmentFlagsRouter(
  runtime: ServiceRuntime,
  options: RouterOptions & { staleAfterDays?: number } = {},
): Router {
  const router = Router({ mergeParams: true })
  const body = jsonBodyFor(options)
  const staleAfterDays = options.staleAfterDays ?? DEFAULT_STALE_AFTER_DAYS
  router.get('/', requireProjectRole('viewer'), listFlags(runtime, staleAfterDays))
  router.get('/:key', requireProjectRole('viewer'), getFlag(runtime, staleAfterDays))
  router.post('/', requireProjectRole('editor'), ...body, putFlag(runtime))
  router.patch('/:key', requireProjectRole('editor'), ...body, patchFlag(runtime))
  router.delete('/:key', requireProjectRole('editor'), deleteFlag(runtime))
  router.post('/:key/promote', requireProjectRole('editor'), ...body, promoteFlag(runtime))
  // The flag's audit trail; a key that was deleted still has one.
  router.get('/:key/history', requireProjectRole('viewer'), async (req, res) => {
    await sendFlagHistory(runtime, res, environmentOf(req), keyOf(req), req.query)
  })

  allowOnly(router, '/', 'GET, POST')
  allowOnly(router, '/:key', 'GET, PATCH, DELETE')
  allowOnly(router, '/:key/history', 'GET')
  allowOnly(router, '/:key/promote', 'POST')
  return router
}

type FlagHandler = (req: Request, res: Response) => Promise<void>

// Straight from the database (not an instance's live set), so a read after a write on another instance sees it.
// Each flag carries its read-only `revision` (of its last change): the base of a later conflict-checked edit, and
// its lifecycle: `tags`, `owner`, `last_changed_at`, `last_evaluated_at`, `stale` (`lifecycle.ts`).
// `?tag=a&tag=b` lists the flags with every one of those tags, `?stale=true` the stale ones, `?archived=true` the
// project's archived flags as they were in this environment.
function listFlags(runtime: ServiceRuntime, staleAfterDays: number): FlagHandler {
  return async (req, res) => {
    const query = flagListQueryOf(req.query)
    const scope = lifecycleScopeOf(runtime, req, staleAfterDays)
    const flags = query.archived
      ? await listArchived(runtime.knex, scope, query)
      : await listLive(runtime.knex, await listFlagRows(runtime.knex, scope.environmentId), scope, query)
    res.type('application/json').send(`[${flags.join(',')}]`)
  }
}

function getFlag(runtime: ServiceRuntime, staleAfterDays: number): FlagHandler {
  return async (req, res) => {
    const key = keyOf(req)
    const scope = lifecycleScopeOf(runtime, req, staleAfterDays)
    const row = await flagRow(runtime.knex, scope.environmentId, key)
    if (!row) throw noFlag(key)
    res.setHeader('ETag', `"${Number(row.revision)}"`)
    res.type('application/json').send(await readLive(runtime.knex, row, scope))
  }
}

const lifecycleScopeOf = (runtime: ServiceRuntime, req: Request, staleAfterDays: number): LifecycleScope => {
  const env = environmentOf(req)
  return { environmentId: env.id, projectId: env.projectId, now: runtime.clock(), staleAfterDays }
}

// Create, or replace entirely when the key exists. A `revision` in the body is read-only: ignored, as are the
// read-only lifecycle fields; `tags` and `owner`, when sent, set the flag's project-level metadata in the same
// transaction (absent: left as they are).
// With a base (If-Match: "<revision>" or base_revision), a replacement that would undo what others changed since
// is a 409, by the three-way rules for an insert. Where approval is required, replacing needs the admin role.
function putFlag(runtime: ServiceRuntime): FlagHandler {
  return async (req, res) => {
    const env = environmentOf(req)
    const { base, body } = baseRevisionOf(req, req.body)
    const { record, meta } = splitMeta(body)
    const key = (record as { key?: unknown } | null)?.key
    const { result, revision } = await writeFlag(
      runtime,
      env,
      { action: 'put', key: typeof key === 'string' ? key : '', record, base },
      {
        audit: await auditOf(runtime.knex, req),
        caller: req,
        alongside: (flags, written) => applyMeta(flags, env.projectId, written.key, meta),
      },
    )
    throwUnlessWritten(result)
    sendFlag(res, result.flag as ServiceFlag, revision)
  }
}

// A merge patch: applied at once (200), or filed as a change request where approval is required (202).
// With a base (If-Match: "<revision>" or base_revision), the three-way rules: 409 on a conflict.
function patchFlag(runtime: ServiceRuntime): FlagHandler {
  return async (req, res) => {
    const env = environmentOf(req)
    const key = keyOf(req)
    const { base, body: patch } = baseRevisionOf(req, req.body)
    const actor = await actorOf(runtime.knex, authOf(req))
    const { result, revision } = await writeFlag(
      runtime,
      env,
      { action: 'patch', key, patch, base },
      { review: changeRequestFiler(actor, runtime.clock()), audit: await auditOf(runtime.knex, req), caller: req },
    )
    if (result.status === 'needs_approval') {
      const { request } = result
      res
        .status(202)
        .json(changeRequestJson(request, request.base_revision === null ? null : Number(request.base_revision)))
      return
    }
    throwUnlessWritten(result)
    sendFlag(res, result.flag as ServiceFlag, revision)
  }
}

// With If-Match: "<revision>", a delete that would drop what others changed since is a 409. Where approval is
// required, deleting needs the admin role (a change request cannot delete).
function deleteFlag(runtime: ServiceRuntime): FlagHandler {
  return async (req, res) => {
    const env = environmentOf(req)
    const key = keyOf(req)
    const { base } = baseRevisionOf(req, undefined)
    const { result } = await writeFlag(
      runtime,
      env,
      { action: 'delete', key, base },
      { audit: await auditOf(runtime.knex, req), caller: req },
    )
    throwUnlessWritten(result)
    noContent(res)
  }
}

// Copies the flag into another environment of the same project, in one transaction: a put there, as
// `POST /api/projects/:id/promote` copies several (`promoteIn`). With a base (If-Match or base_revision: the
// revision of the flag in the TARGET environment), overwriting what others changed there since is a 409; 0 says
// the target had no such flag.
function promoteFlag(runtime: ServiceRuntime): FlagHandler {
  return async (req, res) => {
    const env = environmentOf(req)
    const key = keyOf(req)
    const { base, body: rest } = baseRevisionOf(req, req.body)
    const { target_env_id: targetId } = parseOr422(promoteSchema, rest, 'promotion')
    const ids = { from: env.id, to: targetId }
    const { result, changes } = await runtime.commit(
      async (trx, flags) => {
        const promotion = await promotionOf(trx, env.projectId, env.role, ids, { from: 'env_id', to: 'target_env_id' })
        const [written] = await promoteIn(flags, promotion, [{ key, base }])
        if (!written || written.status === 'missing') throw noFlag(key)
        throwUnlessWritten(written)
        return { written, targetId: promotion.to.id }
      },
      await promotionAuditOf(runtime.knex, req, env.projectId, env.id),
      req,
    )
    const { written, targetId: id } = result
    sendFlag(res, written.flag as ServiceFlag, revisionIn(changes, id, key, written.before?.revision ?? null))
  }
}

/** A written flag with the revision it is at after the write (unchanged when the write changed nothing). */
function sendFlag(res: Response, flag: ServiceFlag, revision: number | undefined): void {
  if (revision === undefined) {
    res.json(flag)
    return
  }
  res.setHeader('ETag', `"${revision}"`)
  res.type('application/json').send(flagJson(flag, revision))
}
