import { type Operation, operationSchema, syncBatchSchema, toIssues } from '@flagsync/protocol'
import {
  bearerAuth,
  corsAllowList,
  declaredActor,
  errorHandler,
  HttpError,
  jsonBody,
  type Logger,
  methodNotAllowed,
  parseOr422,
} from '@flagsync/server-kit'
import { BaseStatesNeeded, type FlagChange, type FlagStore, type FlagWriter, TABLES } from '@flagsync/store'
import { type Request, type RequestHandler, type Response, Router } from 'express'
import { applyBatch, type ConflictMode, operationIssuePath, prefetchBases } from './apply-batch.js'
import type { Collection } from './collection.js'
import { flagsCollection } from './flags-collection.js'
import { quickOperation } from './quick-parse.js'

export interface ReceiverOptions {
  store: FlagStore
  /** Application collections besides the built-in `flags` (a `flags` entry replaces the built-in one). */
  collections?: Record<string, Collection>
  /** Bearer token senders must present; unset: no auth (put your own middleware in front). */
  token?: string
  /** Origins allowed to POST from a browser (CORS); '*' for any. Default: none. */
  corsOrigins?: readonly string[]
  /** Most operations per batch (default 1000); more is a 413. */
  maxOperations?: number
  /** Largest body, bytes or a string like '5mb' (default '5mb'); more is a 413. */
  maxBytes?: number | string
  /** How long applied batch ids are remembered for dedupe (default 30 days). */
  batchRetentionMs?: number
  /**
   * After a successful batch, at most this often (default 1 hour; 0: never),
   * forget batch ids older than the retention: no timer needed wherever it is mounted.
   */
  pruneIntervalMs?: number
  /**
   * Operations with a `baseRevision`: `'merge'` (default) checks them three-way and answers 409
   * on a conflict; `'last-writer-wins'` ignores `baseRevision` (the behaviour without one).
   */
  conflicts?: ConflictMode
  /**
   * The actor recorded in the audit trail for batches authenticated with `token`
   * (default 'receiver-token'; the flag API passes 'sdk-key' when the token is its SDK key).
   */
  actor?: string
  /** Called after each commit with the flag changes it made, e.g. to feed the stream in-process. */
  onCommit?: (changes: FlagChange[]) => void | Promise<void>
  logger?: Logger
  clock?: () => number
}

export interface Receiver extends Router {
  /** Forgets applied batch ids older than the retention period; resolves the number dropped. */
  pruneBatches(): Promise<number>
}

export const DEFAULT_BATCH_RETENTION_MS = 30 * 24 * 60 * 60 * 1000
const DEFAULT_MAX_OPERATIONS = 1000
const DEFAULT_MAX_BYTES = '5mb'
export const DEFAULT_PRUNE_INTERVAL_MS = 60 * 60 * 1000

/**
 * The reference webhook receiver as an Express router: mount it anywhere,
 * e.g. `app.use('/sync', createReceiver({ store }))`. It answers POST with
 * `{batchId, applied}` (or `duplicate: true`) and carries its own JSON error
 * handler, so errors keep their shape inside any app.
 */
export function createReceiver(options: ReceiverOptions): Receiver {
  // A `flags` entry replaces the built-in one, e.g. to wrap `flagsCollection` with an authorization check.
  const collections = new Map<string, Collection>([['flags', flagsCollection]])
  for (const [name, collection] of Object.entries(options.collections ?? {})) collections.set(name, collection)
  const maxOperations = options.maxOperations ?? DEFAULT_MAX_OPERATIONS
  if (!Number.isInteger(maxOperations) || maxOperations < 1)
    throw new TypeError('maxOperations must be a positive integer')
  const clock = options.clock ?? Date.now
  const retention = options.batchRetentionMs ?? DEFAULT_BATCH_RETENTION_MS
  if (!(retention >= 0)) throw new TypeError('batchRetentionMs must be a number of milliseconds')
  const pruneInterval = options.pruneIntervalMs ?? DEFAULT_PRUNE_INTERVAL_MS
  const mode = options.conflicts ?? 'merge'
  if (mode !== 'merge' && mode !== 'last-writer-wins')
    throw new TypeError("conflicts must be 'merge' or 'last-writer-wins'")
  const actor = options.token ? (options.actor ?? 'receiver-token') : (options.actor ?? null)
  let lastPrune = Number.NEGATIVE_INFINITY // the first successful batch prunes
  const logger = options.logger

  const router = Router() as Receiver
  if (options.corsOrigins?.length) router.use(corsAllowList(options.corsOrigins), exposeRetryAfter)
  router.post('/', bearerAuth(options.token), ...jsonBody({ limit: options.maxBytes ?? DEFAULT_MAX_BYTES }), receive)
  router.all('/', methodNotAllowed('POST', 'POST a sync batch here'))
  router.use(errorHandler(logger))

  async function receive(req: Request, res: Response): Promise<void> {
    const envelope = parseOr422(syncBatchSchema, req.body, 'sync batch')
    if (envelope.operations.length > maxOperations) {
      throw new HttpError('payload_too_large', `a batch may hold at most ${maxOperations} operations`, {
        maxOperations,
      })
    }
    const operations = envelope.operations.map((op, index) => parseOperation(op, index, collections))
    const audit = { actor, declaredActor: declaredActor(req), source: 'sync', batchId: envelope.batchId }
    /**
     * Bounded change-log reads under the write lock: a batch whose checks need a base state further
     * back than a few rows of a record's history rolls back, reads its base states outside the lock
     * and applies again; under the lock the second time, only what was committed in between is read.
     */
    const applyOutsideLockReads = async <T>(store: FlagStore, fn: (writer: FlagWriter) => Promise<T>) => {
      try {
        return await store.write(fn, '', audit, { deferBaseStates: true })
      } catch (error) {
        if (!(error instanceof BaseStatesNeeded)) throw error
      }
      const baseStates = await prefetchBases(store, operations, collections, mode)
      return store.write(fn, '', audit, { baseStates })
    }
    const { result, changes } = await applyOutsideLockReads(options.store, (writer) =>
      applyBatch(writer, envelope.batchId, operations, collections, clock(), mode),
    )
    if (changes.length > 0 && options.onCommit) {
      // Committed is committed: a failing listener must not turn the answer into an error the sender retries.
      try {
        await options.onCommit(changes)
      } catch (error) {
        logger?.error({ err: error, batchId: envelope.batchId }, 'receiver: onCommit failed after commit')
      }
    }
    logger?.debug(
      { batchId: envelope.batchId, applied: result.applied, duplicate: result.duplicate },
      'receiver: batch handled',
    )
    // The revision of the batch's last change: none when it changed nothing (a replay, or only unchanged writes).
    const revision = changes.at(-1)?.revision
    res.json({
      batchId: envelope.batchId,
      applied: result.applied,
      ...(result.duplicate ? { duplicate: true } : {}),
      ...(revision === undefined ? {} : { revision }),
    })
    if (pruneInterval > 0 && clock() - lastPrune >= pruneInterval) {
      lastPrune = clock()
      router
        .pruneBatches()
        .catch((error: unknown) => logger?.warn({ err: error }, 'receiver: pruning batch ids failed'))
    }
  }

  router.pruneBatches = async () =>
    options.store.db
      .knex(TABLES.batches)
      .where('applied_at', '<', clock() - retention)
      .delete()
  return router
}

/** Lets browser senders read Retry-After on a 503 (it is not a CORS-safelisted response header). */
const exposeRetryAfter: RequestHandler = (_req, res, next) => {
  if (res.getHeader('Access-Control-Allow-Origin') !== undefined) {
    res.setHeader('Access-Control-Expose-Headers', 'Retry-After')
  }
  next()
}

function parseOperation(raw: unknown, index: number, collections: ReadonlyMap<string, Collection>): Operation {
  const op = quickOperation(raw) ?? parseOperationWithSchema(raw, index)
  if (!collections.has(op.collection)) {
    throw new HttpError(
      'validation_failed',
      `operation ${index}: unknown collection ${JSON.stringify(op.collection)}`,
      {
        operationIndex: index,
        issues: [
          {
            path: operationIssuePath(index, 'collection'),
            message: `unknown collection; known: ${[...collections.keys()].join(', ')}`,
          },
        ],
      },
    )
  }
  return op
}

/** The schema decides what the quick check left open, and words the error. */
function parseOperationWithSchema(raw: unknown, index: number): Operation {
  refuseProtoKey(raw, index)
  const parsed = operationSchema.safeParse(raw)
  if (!parsed.success) {
    const issues = toIssues(parsed.error, ['operations', index])
    const first = issues[0]
    throw new HttpError(
      'validation_failed',
      `operation ${index}: ${first ? `${first.path}: ${first.message}` : 'invalid operation'}`,
      { operationIndex: index, issues },
    )
  }
  return parsed.data
}

/**
 * zod's record schema (`record`, `changes`) drops an own `__proto__` key
 * without a word, so the operation would be applied without it and answered
 * 200; `/api/flags` refuses the same field (a strict schema), and SECURITY.md
 * promises 422 for both.
 */
function refuseProtoKey(raw: unknown, index: number): void {
  if (typeof raw !== 'object' || raw === null) return
  for (const field of ['record', 'changes'] as const) {
    const data: unknown = (raw as Record<string, unknown>)[field]
    if (typeof data === 'object' && data !== null && Object.hasOwn(data, '__proto__')) {
      const path = operationIssuePath(index, `${field}.__proto__`)
      throw new HttpError(
        'validation_failed',
        `operation ${index}: ${path}: __proto__ is not allowed as a field name`,
        {
          operationIndex: index,
          issues: [{ path, message: '__proto__ is not allowed as a field name' }],
        },
      )
    }
  }
}
