import type { Issue } from '@flagsync/protocol'
import { HttpError, parseOr422 } from '@flagsync/server-kit'
import { Router } from 'express'
import { flagJson, revisionIn } from '../audit/flag-audit.js'
import { projectOf, requireProjectRole } from '../auth/guards.js'
import { allowOnly, jsonBodyFor, type RouterOptions } from '../http.js'
import type { ServiceRuntime } from '../service-runtime.js'
import { promoteFlagsSchema } from './model.js'
import { type Promotion, type PromotionResult, promoteIn, promotionAuditOf, promotionOf } from './promote.js'

type Written = Extract<PromotionResult, { status: 'applied' | 'unchanged' }>

/**
 * `POST /api/projects/:project_id/promote` `{from_env_id, to_env_id, flags: [{key, base_revision}]}`: several flags
 * copied from one environment into another in one transaction, all or nothing, each as the single promote copies
 * one. `base_revision` is the flag's revision in the target the caller saw (null: it had none there). Refused:
 * 409 listing every conflicting key with its current revision, 422 for keys missing in the source or flags that
 * do not fit the target (a prerequisite neither there nor promoted along), 403 where the target requires approval
 * and an editor would promote over an existing flag. Nothing is written then.
 */
export function createProjectPromoteRouter(runtime: ServiceRuntime, options: RouterOptions = {}): Router {
  const router = Router({ mergeParams: true })
  router.post('/', requireProjectRole('editor'), ...jsonBodyFor(options), async (req, res) => {
    const project = projectOf(req)
    const body = parseOr422(promoteFlagsSchema, req.body, 'promotion')
    const items = body.flags.map((f) => ({ key: f.key, base: f.base_revision ?? 0 }))
    const { result, changes } = await runtime.commit(
      async (trx, flags) => {
        const promotion = await promotionOf(trx, project.id, project.role, {
          from: body.from_env_id,
          to: body.to_env_id,
        })
        const results = await promoteIn(flags, promotion, items)
        throwUnlessAllWritten(promotion, results)
        return { promotion, written: results as Written[] }
      },
      await promotionAuditOf(runtime.knex, req, project.id, body.from_env_id),
      req,
    )
    const to = result.promotion.to.id
    const promoted = result.written.map((w) => {
      const revision = revisionIn(changes, to, w.key, w.before?.revision ?? null) ?? 0
      return `{"key":${JSON.stringify(w.key)},"changed":${w.status === 'applied'},"flag":${flagJson(w.flag as object, revision)}}`
    })
    res
      .type('application/json')
      .send(
        `{"from_env_id":${JSON.stringify(result.promotion.from.id)},"to_env_id":${JSON.stringify(to)},"flags":[${promoted.join(',')}]}`,
      )
  })
  allowOnly(router, '/', 'POST')
  return router
}

/** Every refusal of a multi-promote at once, as one error: 422 missing sources, 409 conflicts, 403, 422 unfit. */
function throwUnlessAllWritten(promotion: Promotion, results: readonly PromotionResult[]): void {
  const missing: Issue[] = []
  const conflicts: Record<string, unknown>[] = []
  const unfit: Issue[] = []
  const unfitKeys: string[] = []
  let forbidden: string | undefined
  results.forEach((r, i) => {
    if (r.status === 'missing') {
      missing.push({ path: `flags[${i}].key`, message: `no flag ${JSON.stringify(r.key)} in ${promotion.from.name}` })
    } else if (r.status === 'conflict') {
      conflicts.push({ operationIndex: i, collection: 'flags', recordId: r.key, ...r.conflict })
    } else if (r.status === 'forbidden') {
      forbidden ??= r.reason
    } else if (r.status === 'invalid' || r.status === 'not_found') {
      unfitKeys.push(r.key)
      const issues = r.status === 'invalid' ? r.issues : [{ path: 'key', message: 'no such flag' }]
      for (const issue of issues) unfit.push({ path: `flags[${i}].${issue.path}`, message: issue.message })
    }
  })
  if (missing.length > 0) throw invalidPromotion(missing)
  if (conflicts.length > 0) {
    const keys = conflicts.map((c) => c.recordId).join(', ')
    throw new HttpError(
      'conflict',
      `changed in ${promotion.to.name} since you saw it: ${keys}; nothing was promoted (compare again, then retry)`,
      { conflicts },
    )
  }
  if (forbidden) throw new HttpError('forbidden', forbidden)
  if (unfit.length > 0) throw invalidPromotion(unfit, `${unfitKeys.join(', ')} would not fit ${promotion.to.name}`)
}

const invalidPromotion = (issues: Issue[], what?: string) =>
  new HttpError(
    'validation_failed',
    `invalid promotion: ${what ? `${what}: ` : ''}${issues.map((i) => `${i.path}: ${i.message}`).join('; ')}; nothing was promoted`,
    { issues },
  )
