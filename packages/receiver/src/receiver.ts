import { type Operation, operationSchema, syncBatchSchema, toIssues } from '@flagsync/protocol'
import {
  bearerAuth,
  corsAllowList,
  errorHandler,
  HttpError,
  jsonBody,
  type Logger,
  parseOr422,
} from '@flagsync/server-kit'
import { type FlagChange, type FlagStore, TABLES } from '@flagsync/store'
import { type Request, type Response, Router } from 'express'
import { applyBatch } from './apply-batch.js'
import type { Collection } from './collection.js'
import { flagsCollection } from './flags-collection.js'

export interface ReceiverOptions {
  store: FlagStore
  /** Application collections besides the built-in `flags`. */
  collections?: Record<string, Collection>
  /** Bearer token senders must present; unset: no auth (put your own middleware in front). */
  token?: string
  /** Origins allowed to POST from a browser (CORS); '*' for any. Default: none. */
  corsOrigins?: readonly string[]
  /** Most operations per batch (default 1000); more is a 413. */
  maxOperations?: number
  /** Largest body (default '5mb'); more is a 413. */
  maxBytes?: number | string
  /** How long applied batch ids are remembered for dedupe (default 30 days). */
  batchRetentionMs?: number
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

/**
 * The reference webhook receiver as an Express router: mount it anywhere,
 * e.g. `app.use('/sync', createReceiver({ store }))`. It answers POST with
 * `{batchId, applied}` (or `duplicate: true`) and carries its own JSON error
 * handler, so errors keep their shape inside any app.
 */
export function createReceiver(options: ReceiverOptions): Receiver {
  const collections = new Map<string, Collection>([['flags', flagsCollection]])
  for (const [name, collection] of Object.entries(options.collections ?? {})) collections.set(name, collection)
  const maxOperations = options.maxOperations ?? 1000
  const clock = options.clock ?? Date.now
  const retention = options.batchRetentionMs ?? DEFAULT_BATCH_RETENTION_MS

  const router = Router() as Receiver
  if (options.corsOrigins?.length) router.use(corsAllowList(options.corsOrigins))
  router.post('/', bearerAuth(options.token), ...jsonBody({ limit: options.maxBytes ?? '5mb' }), async (req, res) => {
    await receive(req, res)
  })
  router.all('/', (_req, _res, next) => next(new HttpError('method_not_allowed', 'POST a sync batch here')))
  router.use(errorHandler(options.logger))

  async function receive(req: Request, res: Response): Promise<void> {
    const envelope = parseOr422(syncBatchSchema, req.body, 'sync batch')
    if (envelope.operations.length > maxOperations) {
      throw new HttpError('payload_too_large', `a batch may hold at most ${maxOperations} operations`, {
        maxOperations,
      })
    }
    const operations = envelope.operations.map((op, index) => parseOperation(op, index, collections))
    const { result, changes } = await options.store.write((writer) =>
      applyBatch(writer, envelope.batchId, operations, collections, clock()),
    )
    if (changes.length > 0) await options.onCommit?.(changes)
    res.json({
      batchId: envelope.batchId,
      applied: result.applied,
      ...(result.duplicate ? { duplicate: true } : {}),
    })
  }

  router.pruneBatches = async () =>
    options.store.db
      .knex(TABLES.batches)
      .where('applied_at', '<', clock() - retention)
      .delete()
  return router
}

function parseOperation(raw: unknown, index: number, collections: ReadonlyMap<string, Collection>): Operation {
  const parsed = operationSchema.safeParse(raw)
  if (!parsed.success) {
    const issues = toIssues(parsed.error, ['operations', index])
    throw new HttpError('validation_failed', `operation ${index}: ${issues[0]?.message ?? 'invalid'}`, {
      operationIndex: index,
      issues,
    })
  }
  if (!collections.has(parsed.data.collection)) {
    throw new HttpError(
      'validation_failed',
      `operation ${index}: unknown collection ${JSON.stringify(parsed.data.collection)}`,
      {
        operationIndex: index,
        issues: [{ path: `operations[${index}].collection`, message: `known: ${[...collections.keys()].join(', ')}` }],
      },
    )
  }
  return parsed.data
}
