import { applyFlagPatch, type Flag, flagKeySchema, flagSchema } from '@flagsync/protocol'
import { declaredActor, HttpError, ifNoneMatchHits, jsonBody, methodNotAllowed, parseOr422 } from '@flagsync/server-kit'
import { type AuditContext, type CommittedFlag, type FlagChange, withRevision } from '@flagsync/store'
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
    res.type('application/json').send(entry.json)
  })

  router.post('/', ...body, async (req, res) => {
    const flag = parseOr422(flagSchema, req.body, 'flag')
    const who = audit(req, 'POST /api/flags')
    // Read first: a replacement identical to the stored flag then records nothing (see FlagWriter.changes).
    const { changes, result: current } = await store.write(
      async (w) => {
        const committed = await w.committed(flag.key)
        w.put(flag)
        return committed
      },
      '',
      who,
    )
    await feed.ingest(changes)
    sendFlag(res, changes, current)
  })

  router.patch('/:key', ...body, async (req: Request<{ key: string }>, res) => {
    const key = req.params.key
    if (!isFlagKey(key)) throw notFound(key)
    const who = audit(req, 'PATCH /api/flags/:key')
    const { changes, result: current } = await store.write(
      async (w) => {
        const existing = (await w.get(key)) as Flag | undefined
        if (!existing) throw notFound(key)
        const patched = applyFlagPatch(existing, req.body)
        if (!patched.ok) {
          const first = patched.issues[0]
          throw new HttpError('validation_failed', `invalid patch: ${first?.path}: ${first?.message}`, {
            issues: patched.issues,
          })
        }
        w.put(patched.flag)
        return w.committed(key)
      },
      '',
      who,
    )
    await feed.ingest(changes)
    sendFlag(res, changes, current)
  })

  // Deleting is idempotent: 204 whether or not the flag existed (the flat API spec lists no error).
  router.delete('/:key', async (req, res) => {
    if (!isFlagKey(req.params.key)) {
      res.status(204).end()
      return
    }
    const who = audit(req, 'DELETE /api/flags/:key')
    const { changes } = await store.write(async (w) => w.delete(req.params.key), '', who)
    await feed.ingest(changes)
    res.status(204).end()
  })

  router.all('/', methodNotAllowed('GET, POST'))
  router.all('/:key', methodNotAllowed('GET, PATCH, DELETE'))
  return router
}

/**
 * The written flag with its new revision, from the JSON the store serialized
 * once; a write that changed nothing recorded no change, so the flag as
 * committed, with its current revision.
 */
function sendFlag(res: Response, changes: FlagChange[], committed: CommittedFlag): void {
  const change = changes[0]
  const json = change ? (change.json as string) : JSON.stringify(committed.flag)
  res
    .status(200)
    .type('application/json')
    .send(withRevision(json, change ? change.revision : (committed.revision as number)))
}
