import { type Explanation, explain } from '@flagsync/evaluation'
import { parseOr422 } from '@flagsync/server-kit'
import { Router } from 'express'
import { environmentOf, requireProjectRole } from '../auth/guards.js'
import { allowOnly, jsonBodyFor, type RouterOptions } from '../http.js'
import type { FlagStreams } from '../streams/flag-streams.js'
import { snapshotFlags } from '../streams/snapshot-flags.js'
import { type EvaluatedFlag, evaluateRequestSchema } from './schema.js'

/**
 * POST /api/environments/:env_id/evaluate (after `loadEnvironment`), viewers
 * and above: what each flag serves a given context and why. It evaluates the
 * flags exactly as SDKs receive them (the stream's snapshot, segments expanded)
 * with the evaluator every client runs, prerequisites included.
 */
export function createEvaluateRouter(streams: FlagStreams, options: RouterOptions = {}): Router {
  const router = Router({ mergeParams: true })
  router.post('/', requireProjectRole('viewer'), ...jsonBodyFor(options), async (req, res) => {
    const { context, keys } = parseOr422(evaluateRequestSchema, req.body, 'evaluation request')
    const env = environmentOf(req)
    await streams.ready()
    const flags = snapshotFlags(streams, env.id, env.projectId)
    const byKey = new Map(flags.map((f) => [f.key, f]))
    const getFlag = (key: string) => byKey.get(key)
    const wanted = keys ?? flags.map((f) => f.key)
    const answers = wanted.map((key): EvaluatedFlag => {
      const flag = byKey.get(key)
      if (!flag) return { key, value: null, variant: null, reason: 'ERROR', error: 'FLAG_NOT_FOUND' }
      return entryOf(key, explain(flag, context, getFlag))
    })
    res.json({ flags: answers })
  })
  allowOnly(router, '/', 'POST')
  return router
}

function entryOf(key: string, e: Explanation): EvaluatedFlag {
  const entry: EvaluatedFlag = { key, value: e.value ?? null, variant: e.variant ?? null, reason: e.reason }
  if (e.ruleIndex !== undefined) entry.rule_index = e.ruleIndex
  if (e.bucket !== undefined) entry.bucket = e.bucket
  if (e.errorCode !== undefined) entry.error = e.errorCode
  return entry
}
