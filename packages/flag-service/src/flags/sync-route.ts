import { flagKeySchema, type Issue, toIssues } from '@flagsync/protocol'
import {
  type Collection,
  type CollectionContext,
  createReceiver,
  OperationConflict,
  type OperationMeta,
  OperationRejected,
} from '@flagsync/receiver'
import { HttpError } from '@flagsync/server-kit'
import { type FlagWriter, jsonEqual } from '@flagsync/store'
import { type Request, type Response, Router } from 'express'
import { type EnvironmentAccess, roleAtLeast } from '../auth/context.js'
import { authOf, environmentOf } from '../auth/guards.js'
import { verifyAccess } from '../auth/verify-access.js'
import { allowOnly, type RouterOptions } from '../routes/common.js'
import type { ServiceRuntime } from '../service-runtime.js'
import { fileChangeRequest, requiresApproval } from './change-requests.js'
import { assertFitsEnvironment, assertNoneDepend, stagedEnvironmentFlags } from './checks.js'
import { type Actor, actorOf, withoutRevision } from './flag-audit.js'
import { checkFlagBase, type FlagConflict } from './flag-conflicts.js'
import { type FlagPatch, flagBodySchema, flagPatchSchema, mergeFlag, type ServiceFlag } from './model.js'

/** A change request a batch operation filed instead of applying (approval environments). */
export interface FiledRequest {
  operationIndex: number
  recordId: string
  id: number
}

/** How often the service forgets old batch ids (the receiver's own timer is off: one receiver per request). */
const PRUNE_INTERVAL_MS = 60 * 60 * 1000

/**
 * `POST /api/environments/:env_id/sync` (after `authenticate` and
 * `loadEnvironment`): the reference receiver (`createReceiver`, the sync
 * spec's batch format, idempotent by batchId, one transaction, 409 conflicts) with
 * a `flags` collection scoped to the environment, applying the service's
 * rules to every operation: the caller's role, the flag schema and
 * environment checks of the REST routes, and change requests where the
 * environment requires approval. A receiver is made per request (cheap: a
 * router) so the collection knows its caller; batch ids are pruned here.
 */
export function createEnvironmentSyncRouter(runtime: ServiceRuntime, options: RouterOptions = {}): Router {
  const router = Router({ mergeParams: true })
  let lastPrune = Number.NEGATIVE_INFINITY
  router.post('/', async (req, res, next) => {
    const env = environmentOf(req)
    const auth = authOf(req)
    const filed: FiledRequest[] = []
    const caller = { env, actor: await actorOf(runtime.knex, auth), req, runtime, filed }
    const receiver = createReceiver({
      store: runtime.store,
      collections: { flags: environmentFlagsCollection(caller) },
      actor: caller.actor.name,
      maxBytes: options.bodyLimit ?? '1mb',
      pruneIntervalMs: 0,
      onCommit: (changes) => runtime.publish(changes),
      logger: runtime.logger,
      clock: runtime.clock,
    })
    withFiledRequests(runtime, res, env.id, filed)
    res.on('finish', () => {
      if (res.statusCode !== 200 || runtime.clock() - lastPrune < PRUNE_INTERVAL_MS) return
      lastPrune = runtime.clock()
      receiver.pruneBatches().catch((err) => runtime.logger.warn({ err }, 'sync: pruning batch ids failed'))
    })
    receiver(req, res, next)
  })
  allowOnly(router, '/', 'POST')
  return router
}

/**
 * Adds `change_requests` to the receiver's 200: the requests this batch
 * filed, or, for a replay (`duplicate: true`), the ones its first delivery
 * filed (looked up by batch id), so a sender whose answer was lost learns them.
 */
function withFiledRequests(runtime: ServiceRuntime, res: Response, environmentId: string, filed: FiledRequest[]): void {
  const json = res.json.bind(res)
  res.json = (body: unknown) => {
    const answer = body as { batchId?: unknown; duplicate?: boolean }
    if (res.statusCode !== 200 || typeof answer?.batchId !== 'string') return json(body)
    if (!answer.duplicate) return json({ ...answer, change_requests: filed })
    runtime
      .knex('flagsync_change_requests')
      .where({ batch_id: answer.batchId, environment_id: environmentId })
      .orderBy('op_index')
      .select('id', 'flag_key', 'op_index')
      .then((rows: Array<{ id: number | string; flag_key: string; op_index: number | string }>) =>
        json({
          ...answer,
          change_requests: rows.map((r) => ({
            operationIndex: Number(r.op_index),
            recordId: r.flag_key,
            id: Number(r.id),
          })),
        }),
      )
      .catch(() => json({ ...answer, change_requests: [] }))
    return res
  }
}

interface SyncCaller {
  env: EnvironmentAccess
  actor: Actor
  req: Request
  runtime: ServiceRuntime
  filed: FiledRequest[]
}

/** One batch's view of the environment: its caller, and whether approval is required (re-read in `prepare`). */
interface SyncBatch {
  caller: SyncCaller
  approval: boolean
}

/** The flags collection of one environment, for one caller. */
function environmentFlagsCollection(caller: SyncCaller): Collection {
  // Read again in `prepare`, inside the batch's transaction: `env` was loaded before the batch waited for the lock.
  const batch: SyncBatch = { caller, approval: caller.env.requireApproval }
  return {
    // Base states before the lock (see the receiver's `Collection.prefetch`); `prepare` reads only newer ones.
    prefetch: (store, bases) => store.readStatesAt(bases, caller.env.id),
    prepare: (ctx, recordIds, bases) => prepareBatch(batch, ctx, recordIds, bases),
    insert: (ctx, key, record, meta) => insertFlag(batch, ctx, key, record, meta),
    update: (ctx, key, changes, meta) => updateFlag(batch, ctx, key, changes, meta),
    delete: (ctx, key, meta) => deleteFlag(batch, ctx, key, meta),
  }
}

async function prepareBatch(
  batch: SyncBatch,
  { writer }: CollectionContext,
  recordIds: string[],
  bases: ReadonlyArray<readonly [recordId: string, baseRevision: number]>,
): Promise<void> {
  const { env, req, runtime } = batch.caller
  // Once per batch, inside its transaction: a credential revoked while the batch waited for the lock applies nothing.
  await verifyAccess(writer.trx, req, runtime.clock())
  // The same for approval: switched on while the batch waited, its changes are filed, not applied.
  batch.approval = await requiresApproval(writer.trx, env.id)
  await writer.load(recordIds, env.id)
  await writer.statesAt(bases, env.id)
}

async function insertFlag(
  batch: SyncBatch,
  { writer }: CollectionContext,
  key: string,
  record: Record<string, unknown>,
  meta: OperationMeta,
): Promise<void> {
  const { env } = batch.caller
  mayWrite(env, 'creating or replacing', meta)
  if (record.key !== undefined && record.key !== key) {
    throw new OperationRejected('record.key must equal recordId', [
      { path: 'record.key', message: `expected ${JSON.stringify(key)} (the recordId)` },
    ])
  }
  const parsed = flagBodySchema.safeParse(withoutRevision({ ...record, key }))
  if (!parsed.success) throw new OperationRejected('invalid flag', toIssues(parsed.error, ['record']))
  const flag = parsed.data
  await refuseConflict(env, writer, key, 'insert', flag, meta)
  const existing = (await writer.get(key, env.id)) as ServiceFlag | undefined
  if (existing && batch.approval && !roleAtLeast(env.role, 'admin')) {
    // Replacing an existing flag would bypass the review: filed as the patch that turns it into the record.
    const patch = replacementPatch(existing, flag)
    if (Object.keys(patch).length > 0) await file(batch.caller, writer, key, patch, meta)
    return
  }
  await rejectingEnvironmentIssues(() => assertFitsEnvironment(writer, env, flag), 'record')
  writer.put(flag, env.id)
}

async function updateFlag(
  batch: SyncBatch,
  { writer }: CollectionContext,
  key: string,
  changes: Record<string, unknown>,
  meta: OperationMeta,
): Promise<void> {
  const { env } = batch.caller
  mayWrite(env, 'changing', meta)
  const parsed = flagPatchSchema.safeParse(withoutRevision(changes))
  if (!parsed.success) throw new OperationRejected('invalid changes', toIssues(parsed.error, ['changes']))
  const patch = parsed.data
  const current = (await writer.get(key, env.id)) as ServiceFlag | undefined
  const merged = current ? await rejectingEnvironmentIssues(() => mergeFlag(current, patch), 'changes') : undefined
  const sets: Record<string, unknown> = {}
  for (const field of Object.keys(patch)) {
    if (field !== 'key')
      sets[field] = merged ? (merged as Record<string, unknown>)[field] : patch[field as keyof FlagPatch]
  }
  await refuseConflict(env, writer, key, 'update', sets, meta)
  if (!current || !merged) {
    throw new OperationRejected(`flag ${JSON.stringify(key)} does not exist`, [
      { path: 'recordId', message: 'no flag with this key; insert it first' },
    ])
  }
  if (batch.approval) {
    // Changes that change nothing are applied as they are (a no-op): there is nothing to review.
    if (!jsonEqual(merged, current)) await file(batch.caller, writer, key, patch, meta)
    return
  }
  await rejectingEnvironmentIssues(
    () => assertFitsEnvironment(writer, env, merged, 'flag after the changes'),
    'changes',
  )
  writer.put(merged, env.id)
}

async function deleteFlag(
  batch: SyncBatch,
  { writer }: CollectionContext,
  key: string,
  meta: OperationMeta,
): Promise<void> {
  const { env } = batch.caller
  mayWrite(env, 'deleting', meta)
  // A key no flag can have is a wrong id, not a flag that is already gone.
  const valid = flagKeySchema.safeParse(key)
  if (!valid.success) throw new OperationRejected('recordId is not a flag key', toIssues(valid.error, ['recordId']))
  await refuseConflict(env, writer, key, 'delete', null, meta)
  if (!(await writer.get(key, env.id))) return // already gone: not an error
  if (batch.approval && !roleAtLeast(env.role, 'admin')) {
    throw forbidden(
      meta.index,
      `${env.name} requires approval: deleting a flag needs the project admin role (a change request cannot delete)`,
    )
  }
  const flags = await stagedEnvironmentFlags(writer, env.id)
  await rejectingEnvironmentIssues(async () => assertNoneDepend(key, flags), 'recordId')
  await writer.delete(key, env.id)
}

function mayWrite(env: EnvironmentAccess, action: string, meta: OperationMeta): void {
  if (!roleAtLeast(env.role, 'editor')) {
    throw forbidden(meta.index, `${action} a flag needs the editor role in the project (you are ${env.role})`)
  }
}

/** With a base revision, the receiver's three-way rules: an operation that would undo others' changes conflicts. */
async function refuseConflict(
  env: EnvironmentAccess,
  writer: FlagWriter,
  key: string,
  action: 'insert' | 'update' | 'delete',
  sets: Record<string, unknown> | null,
  meta: OperationMeta,
): Promise<void> {
  if (meta.baseRevision === undefined) return
  const found: FlagConflict | null = await checkFlagBase(writer, env.id, key, action, sets, meta.baseRevision)
  if (found) throw new OperationConflict(found)
}

/** Files a change request for one operation, in the batch's transaction, and remembers its id for the answer. */
async function file(caller: SyncCaller, writer: FlagWriter, key: string, patch: FlagPatch, meta: OperationMeta) {
  const batchId = (caller.req.body as { batchId?: unknown } | undefined)?.batchId
  const request = await fileChangeRequest(writer.trx, {
    environmentId: caller.env.id,
    flagKey: key,
    patch,
    actor: caller.actor,
    now: caller.runtime.clock(),
    baseRevision: (await writer.committed(key, caller.env.id)).revision,
    batch: typeof batchId === 'string' ? { id: batchId, opIndex: meta.index } : undefined,
  })
  caller.filed.push({ operationIndex: meta.index, recordId: key, id: Number(request.id) })
}

/** The merge patch that turns `current` into `next` (fields `next` lacks are cleared with null). */
function replacementPatch(current: ServiceFlag, next: ServiceFlag): FlagPatch {
  const patch: Record<string, unknown> = {}
  const before = current as Record<string, unknown>
  const after = next as Record<string, unknown>
  for (const field of new Set([...Object.keys(before), ...Object.keys(after)])) {
    if (field === 'key') continue
    if (JSON.stringify(before[field]) === JSON.stringify(after[field])) continue
    patch[field] = field in after ? after[field] : null
  }
  return patch as FlagPatch
}

const forbidden = (index: number, message: string) =>
  new HttpError('forbidden', `operation ${index}: ${message}`, { operationIndex: index })

/**
 * The REST checks answer a 422 `HttpError` (invalid flag after the patch,
 * prerequisite missing or in a cycle) or a 409 (other flags depend on it):
 * inside a batch they become the operation's rejection (a 422 naming it), as
 * a 409 from a sync receiver means a conflict body the sender resolves.
 */
async function rejectingEnvironmentIssues<T>(check: () => T | Promise<T>, prefix: string): Promise<T> {
  try {
    return await check()
  } catch (error) {
    if (!(error instanceof HttpError) || (error.code !== 'validation_failed' && error.code !== 'conflict')) throw error
    const issues = (error.details.issues as Issue[] | undefined) ?? [{ path: '(root)', message: error.message }]
    throw new OperationRejected(
      error.message,
      issues.map((i) => ({ ...i, path: i.path === '(root)' || i.path === '' ? prefix : `${prefix}.${i.path}` })),
    )
  }
}
