import { type Flag, flagKeySchema } from '@flagsync/protocol'
import { flatFlagModel } from '@flagsync/receiver'
import {
  baseRevisionOf,
  declaredActor,
  HttpError,
  ifNoneMatchHits,
  jsonBody,
  methodNotAllowed,
} from '@flagsync/server-kit'
import {
  type AuditContext,
  type CommittedFlag,
  type FlagChange,
  type FlagWriteIntent,
  type FlagWriteResult,
  singleFlagConflict,
  withRevision,
  writeFlagChange,
} from '@flagsync/store'
import { type Request, type Response, Router } from 'express'
import type { FlagRuntime } from './flag-runtime.js'

export interface FlagsRouterOptions {
  runtime: FlagRuntime
  /** Largest accepted body (default '1mb'). */
  bodyLimit?: number | string
  /** The audit trail's actor for authenticated writes (the flag API passes 'sdk-key' when SDK_KEY is set). */
  actor?: string | null
}

const notFound = (key: string) => new HttpError('not_found', `no flag with key ${JSON.stringify(key)}`)
/** No flag can have a key outside the key alphabet, so such a key never needs a database round trip. */
const isFlagKey = (key: string) => flagKeySchema.safeParse(key).success

/** `/api/flags` of the flat API spec. Reads come from the live set; writes commit, then update it before answering. */
export function createFlagsRouter({ runtime, bodyLimit, actor = null }: FlagsRouterOptions): Router {
  const { store, live, feed } = runtime
  const router = Router()
  const body = jsonBody({ limit: bodyLimit ?? '1mb' })
  const audit = (req: Request, route: string): AuditContext => ({
    actor,
    declaredActor: declaredActor(req),
    source: `api:${route}`,
  })

  router.get('/', (req, res) => {
    const list = live.serializedList('')
    res.setHeader('ETag', list.etag)
    res.setHeader('Cache-Control', 'no-cache')
    if (ifNoneMatchHits(req.headers['if-none-match'], list.etag)) {
      res.status(304).end()
      return
    }
    res.type('application/json').send(list.body)
  })

  router.get('/:key', (req, res) => {
    const entry = live.get(req.params.key)
    if (!entry) throw notFound(req.params.key)
    res.setHeader('ETag', `"${entry.revision}"`)
    res.setHeader('Cache-Control', 'no-cache')
    res.type('application/json').send(entry.json)
  })

  // Every write is one of the store's write core (`writeFlagChange`, the flat model), as a /sync operation is.
  // With a base (If-Match: "<revision>" or base_revision), the three-way rules: a replacement or patch that would
  // undo what others changed since is a 409 and nothing is written; fields others changed that it does not set merge.
  const write = async (req: Request, intent: FlagWriteIntent, route: string) => {
    const { changes, result } = await store.write(
      (w) => writeFlagChange(w, '', intent, { model: flatFlagModel }),
      '',
      audit(req, route),
    )
    await feed.ingest(changes)
    return { changes, result }
  }

  router.post('/', ...body, async (req, res) => {
    const { base, body: record } = baseRevisionOf(req, req.body)
    const key = (record as { key?: unknown } | null)?.key
    const intent = { action: 'put', key: typeof key === 'string' ? key : '', record, base } as const
    const { changes, result } = await write(req, intent, 'POST /api/flags')
    sendFlag(res, changes, writtenOrThrow(result))
  })

  router.patch('/:key', ...body, async (req: Request<{ key: string }>, res) => {
    const key = req.params.key
    const { base, body: patch } = baseRevisionOf(req, req.body)
    if (!isFlagKey(key)) throw notFound(key)
    const { changes, result } = await write(req, { action: 'patch', key, patch, base }, 'PATCH /api/flags/:key')
    sendFlag(res, changes, writtenOrThrow(result))
  })

  // Deleting is idempotent: 204 whether or not the flag existed (the flat API spec lists no error). With
  // If-Match: "<revision>", a delete that would drop what others changed since is a 409.
  router.delete('/:key', async (req, res) => {
    const { base } = baseRevisionOf(req, undefined)
    const key = req.params.key
    if (isFlagKey(key)) {
      const { result } = await write(req, { action: 'delete', key, base }, 'DELETE /api/flags/:key')
      if (result.status !== 'not_found') writtenOrThrow(result)
    }
    res.status(204).end()
  })

  router.all('/', methodNotAllowed('GET, POST'))
  router.all('/:key', methodNotAllowed('GET, PATCH, DELETE'))
  return router
}

/**
 * The flag as committed before the write (its revision answers an unchanged write); a refusal is the flat API's
 * error: 409 with the receiver's conflict body, 404, 422 naming the first issue.
 */
function writtenOrThrow(result: FlagWriteResult<Flag>): CommittedFlag {
  switch (result.status) {
    case 'applied':
    case 'unchanged':
      return result.before ?? { flag: null, revision: null }
    case 'conflict': {
      const { message, details } = singleFlagConflict(result.key, result.conflict)
      throw new HttpError('conflict', message, details)
    }
    case 'not_found':
      throw notFound(result.key)
    case 'invalid':
      throw new HttpError('validation_failed', result.message, { issues: result.issues })
    default:
      // No gate in the flat API: never needs_approval or forbidden.
      throw new Error(`unexpected flag write result ${result.status}`)
  }
}

/**
 * The written flag with its new revision (also as its `ETag`), from the JSON the store serialized
 * once; a write that changed nothing recorded no change, so the flag as
 * committed, with its current revision.
 */
function sendFlag(res: Response, changes: FlagChange[], committed: CommittedFlag): void {
  const change = changes[0]
  const json = change ? (change.json as string) : JSON.stringify(committed.flag)
  const revision = change ? change.revision : (committed.revision as number)
  res.status(200).setHeader('ETag', `"${revision}"`)
  res.type('application/json').send(withRevision(json, revision))
}
