import { HttpError, parseOr422 } from '@flagsync/server-kit'
import { Router } from 'express'
import { requireUser, userOf } from '../auth/guards.js'
import { recordRevocation } from '../auth/revocations.js'
import { displayPrefix, generateSecret, hashSecret, PAT_PREFIX } from '../auth/secrets.js'
import { allowOnly, jsonBodyFor, noContent, type RouterOptions } from '../http.js'
import { intId } from '../schemas.js'
import type { ServiceRuntime } from '../service-runtime.js'
import { deleteToken, insertToken, listTokens } from './queries.js'
import { tokenJson } from './rows.js'
import { createTokenSchema } from './schema.js'

const DAY_MS = 24 * 60 * 60 * 1000
const noToken = (raw: string) => new HttpError('not_found', `you have no token ${JSON.stringify(raw)}`)

/**
 * /api/tokens: always the caller's own personal access tokens (no admin
 * override). A read_only token is refused every write by `authenticate`,
 * creating tokens of either scope included.
 */
export function createTokensRouter(runtime: ServiceRuntime, options: RouterOptions = {}): Router {
  const router = Router()
  const body = jsonBodyFor(options)
  router.use(requireUser)

  router.get('/', async (req, res) => {
    res.json((await listTokens(runtime.knex, userOf(req).id)).map(tokenJson))
  })

  router.post('/', ...body, async (req, res) => {
    const user = userOf(req)
    const input = parseOr422(createTokenSchema, req.body, 'token')
    const token = generateSecret(PAT_PREFIX)
    const now = runtime.clock()
    const record = {
      user_id: user.id,
      name: input.name,
      scope: input.scope,
      token_hash: hashSecret(token),
      prefix: displayPrefix(token),
      created_at: now,
      last_used_at: null,
      expires_at: input.expires_in_days == null ? null : now + input.expires_in_days * DAY_MS,
    }
    // In a write, so a session or token revoked meanwhile cannot mint a new token (see verifyAccess).
    const id = await runtime.write((trx) => insertToken(trx, record), undefined, req)
    res.json({ ...tokenJson({ ...record, id }), token })
  })

  router.delete('/:id', async (req, res) => {
    const raw = String(req.params.id)
    const id = intId(raw)
    if (id === undefined) throw noToken(raw)
    const user = userOf(req)
    await runtime.write(
      async (trx, flags) => {
        if (!(await deleteToken(trx, user.id, id))) throw noToken(raw)
        recordRevocation(flags, `token:${id}`, runtime.clock()) // its open streams end now
      },
      undefined,
      req,
    )
    noContent(res)
  })

  allowOnly(router, '/', 'GET, POST')
  allowOnly(router, '/:id', 'DELETE')
  return router
}
