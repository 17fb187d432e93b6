import { applyFlagPatch, type Flag, flagKeySchema, flagSchema } from '@flagsync/protocol'
import { checkFlagBase, flagConflictError } from '@flagsync/receiver'
import {
  baseRevisionOf,
  declaredActor,
  HttpError,
  ifNoneMatchHits,
  jsonBody,
  methodNotAllowed,
  parseOr422,
} from '@flagsync/server-kit'
import { type AuditContext, type CommittedFlag, type FlagChange, type FlagWriter, withRevision } from '@flagsync/store'
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

  // With a base (If-Match: "<revision>" or base_revision), a replacement that would undo what others changed
  // since is a 409, by the receiver's three-way rules for an insert.
  router.post('/', ...body, async (req, res) => {
    const { base, body: rest } = baseRevisionOf(req, req.body)
    const flag = parseOr422(flagSchema, rest, 'flag')
    const who = audit(req, 'POST /api/flags')
    // Read first: a replacement identical to the stored flag then records nothing (see FlagWriter.changes).
    const { changes, result: current } = await store.write(
      async (w) => {
        if (base !== undefined) await refuseConflict(w, flag.key, 'insert', flag, base)
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

  // With a base (If-Match: "<revision>" or base_revision), the receiver's three-way rules: fields others changed
  // since merge, a field both changed differently is a 409 and nothing is written.
  router.patch('/:key', ...body, async (req: Request<{ key: string }>, res) => {
    const key = req.params.key
    const { base, body: patch } = baseRevisionOf(req, req.body)
    if (!isFlagKey(key)) throw notFound(key)
    const who = audit(req, 'PATCH /api/flags/:key')
    const { changes, result: current } = await store.write(
      async (w) => {
        const existing = (await w.get(key)) as Flag | undefined
        const patched = existing ? patchedFlag(existing, patch) : undefined
        if (base !== undefined) await refuseConflict(w, key, 'update', patchedFields(patch, patched), base)
        if (!patched) throw notFound(key)
        w.put(patched)
        return w.committed(key)
      },
      '',
      who,
    )
    await feed.ingest(changes)
    sendFlag(res, changes, current)
  })

  // Deleting is idempotent: 204 whether or not the flag existed (the flat API spec lists no error). With
  // If-Match: "<revision>", a delete that would drop what others changed since is a 409.
  router.delete('/:key', async (req, res) => {
    const { base } = baseRevisionOf(req, undefined)
    const key = req.params.key
    if (!isFlagKey(key)) {
      res.status(204).end()
      return
    }
    const who = audit(req, 'DELETE /api/flags/:key')
    const { changes } = await store.write(
      async (w) => {
        if (base !== undefined) await refuseConflict(w, key, 'delete', null, base)
        await w.delete(key)
      },
      '',
      who,
    )
    await feed.ingest(changes)
    res.status(204).end()
  })

  router.all('/', methodNotAllowed('GET, POST'))
  router.all('/:key', methodNotAllowed('GET, PATCH, DELETE'))
  return router
}

/** The flag after a merge patch; a patch that does not validate is a 422 naming the first issue. */
function patchedFlag(existing: Flag, patch: unknown): Flag {
  const patched = applyFlagPatch(existing, patch)
  if (patched.ok) return patched.flag
  const first = patched.issues[0]
  throw new HttpError('validation_failed', `invalid patch: ${first?.path}: ${first?.message}`, {
    issues: patched.issues,
  })
}

/** What a patch sets, as values of the patched flag (a null that removes a field is its absence), for the check. */
function patchedFields(patch: unknown, patched: Flag | undefined): Record<string, unknown> {
  const fields = typeof patch === 'object' && patch !== null ? Object.keys(patch) : []
  const out: Record<string, unknown> = {}
  for (const field of fields) {
    if (field !== 'key') out[field] = patched ? (patched as Record<string, unknown>)[field] : (patch as never)[field]
  }
  return out
}

/** The flag service's base check, on the flat API's one scope (''): a conflict is the receiver's 409. */
async function refuseConflict(
  w: FlagWriter,
  key: string,
  action: 'insert' | 'update' | 'delete',
  sets: Record<string, unknown> | null,
  base: number,
): Promise<void> {
  const conflict = await checkFlagBase(w, '', key, action, sets, base)
  if (conflict) throw flagConflictError(key, conflict)
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
