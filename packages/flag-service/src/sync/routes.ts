import { flagKeySchema, toIssues } from '@flagsync/protocol'
import {
  assertRecordKey,
  type Collection,
  type CollectionContext,
  createReceiver,
  OperationConflict,
  type OperationMeta,
  OperationRejected,
} from '@flagsync/receiver'
import { HttpError } from '@flagsync/server-kit'
import type { FlagWriteIntent } from '@flagsync/store'
import { type Request, type Response, Router } from 'express'
import { type Actor, actorOf } from '../audit/flag-audit.js'
import { type EnvironmentAccess, roleAtLeast } from '../auth/context.js'
import { authOf, environmentOf } from '../auth/guards.js'
import { verifyAccess } from '../auth/verify-access.js'
import { changeRequestFiler } from '../change-requests/file.js'
import { type ChangeRequestRow, requestsOfBatch } from '../change-requests/rows.js'
import { type ReviewFiler, type ServiceWriteResult, writeFlagIn } from '../flags/write-flag.js'
import { allowOnly, type RouterOptions } from '../http.js'
import type { ServiceRuntime } from '../service-runtime.js'

/** A change request a batch operation filed instead of applying (approval environments). */
interface FiledRequest {
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
    requestsOfBatch(runtime.knex, answer.batchId, environmentId)
      .then((rows) =>
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

/** The flags collection of one environment, for one caller: each operation a write through `writeFlagIn`. */
function environmentFlagsCollection(caller: SyncCaller): Collection {
  const { env } = caller
  return {
    // Base states before the lock (see the receiver's `Collection.prefetch`); `prepare` reads only newer ones.
    prefetch: (store, bases) => store.readStatesAt(bases, env.id),
    prepare: (ctx, recordIds, bases) => prepareBatch(caller, ctx, recordIds, bases),
    async insert({ writer }, key, record, meta) {
      mayWrite(env, 'creating or replacing', meta)
      assertRecordKey(record, key)
      const intent = { action: 'put', key, record, base: meta.baseRevision } as const
      answer(caller, meta, intent, await writeFlagIn(writer, env, intent, { review: filer(caller, meta) }))
    },
    async update({ writer }, key, changes, meta) {
      mayWrite(env, 'changing', meta)
      const intent = { action: 'patch', key, patch: changes, base: meta.baseRevision } as const
      answer(caller, meta, intent, await writeFlagIn(writer, env, intent, { review: filer(caller, meta) }))
    },
    async delete({ writer }, key, meta) {
      mayWrite(env, 'deleting', meta)
      // A key no flag can have is a wrong id, not a flag that is already gone.
      const valid = flagKeySchema.safeParse(key)
      if (!valid.success) throw new OperationRejected('recordId is not a flag key', toIssues(valid.error, ['recordId']))
      const intent = { action: 'delete', key, base: meta.baseRevision } as const
      answer(caller, meta, intent, await writeFlagIn(writer, env, intent, {}))
    },
  }
}

async function prepareBatch(
  caller: SyncCaller,
  { writer }: CollectionContext,
  recordIds: string[],
  bases: ReadonlyArray<readonly [recordId: string, baseRevision: number]>,
): Promise<void> {
  const { env, req, runtime } = caller
  // Once per batch, inside its transaction: a credential revoked while the batch waited for the lock applies nothing.
  await verifyAccess(writer.trx, req, runtime.clock())
  await writer.load(recordIds, env.id)
  await writer.statesAt(bases, env.id)
}

function mayWrite(env: EnvironmentAccess, action: string, meta: OperationMeta): void {
  if (!roleAtLeast(env.role, 'editor')) {
    throw forbidden(meta.index, `${action} a flag needs the editor role in the project (you are ${env.role})`)
  }
}

/** Files an operation's patch for review in the batch's transaction, with the batch id and operation index. */
function filer(caller: SyncCaller, meta: OperationMeta): ReviewFiler<ChangeRequestRow> {
  const batchId = (caller.req.body as { batchId?: unknown } | undefined)?.batchId
  const batch = typeof batchId === 'string' ? { id: batchId, opIndex: meta.index } : undefined
  return changeRequestFiler(caller.actor, caller.runtime.clock(), batch)
}

/**
 * A write's result as the batch answers it: applied, unchanged or filed (listed in `change_requests`) go on;
 * a conflict is the receiver's 409, a refusal the operation's 403 or 422 (a delete of a flag already gone is done).
 */
function answer(
  caller: SyncCaller,
  meta: OperationMeta,
  intent: FlagWriteIntent,
  result: ServiceWriteResult<ChangeRequestRow>,
): void {
  switch (result.status) {
    case 'applied':
    case 'unchanged':
      return
    case 'needs_approval':
      caller.filed.push({ operationIndex: meta.index, recordId: result.key, id: Number(result.request.id) })
      return
    case 'conflict':
      throw new OperationConflict(result.conflict)
    case 'forbidden':
      throw forbidden(meta.index, result.reason)
    case 'not_found':
      if (intent.action === 'delete') return
      throw new OperationRejected(`flag ${JSON.stringify(result.key)} does not exist`, [
        { path: 'recordId', message: 'no flag with this key; insert it first' },
      ])
    case 'invalid': {
      const prefix = intent.action === 'put' ? 'record' : intent.action === 'patch' ? 'changes' : 'recordId'
      const words = intent.action === 'put' ? 'invalid flag' : 'invalid changes'
      throw new OperationRejected(
        result.stage === 'input' ? words : result.message,
        result.issues.map((i) => ({
          ...i,
          path: i.path === '(root)' || i.path === '' ? prefix : `${prefix}.${i.path}`,
        })),
      )
    }
  }
}

const forbidden = (index: number, message: string) =>
  new HttpError('forbidden', `operation ${index}: ${message}`, { operationIndex: index })
