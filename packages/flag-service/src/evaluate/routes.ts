import { type Explanation, explain } from '@flagsync/evaluation'
import type { EvaluableFlag } from '@flagsync/protocol'
import { parseOr422 } from '@flagsync/server-kit'
import { Router } from 'express'
import { environmentOf, requireProjectRole } from '../auth/guards.js'
import { allowOnly, jsonBodyFor, type RouterOptions } from '../http.js'
import type { FlagStreams } from '../streams/flag-streams.js'
import { snapshotFlags } from '../streams/snapshot-flags.js'
import { ruleOrigin } from './rule-origin.js'
import { type DecidingRule, type EvaluatedFlag, evaluateRequestSchema } from './schema.js'

/**
 * POST /api/environments/:env_id/evaluate (after `loadEnvironment`), viewers
 * and above: what each flag serves a given context and why. It evaluates the
 * flags exactly as SDKs receive them (the stream's snapshot, segments expanded)
 * with the evaluator every client runs, prerequisites included. Unsaved flags
 * in the body (`flags`) replace the saved ones of their keys for this call
 * only, expanded with the project's segments the same way.
 */
export function createEvaluateRouter(streams: FlagStreams, options: RouterOptions = {}): Router {
  const router = Router({ mergeParams: true })
  router.post('/', requireProjectRole('viewer'), ...jsonBodyFor(options), async (req, res) => {
    const { context, keys, flags: drafts } = parseOr422(evaluateRequestSchema, req.body, 'evaluation request')
    const env = environmentOf(req)
    await streams.ready()
    const saved = snapshotFlags(streams, env.id, env.projectId)
    const byKey = new Map(saved.map((f) => [f.key, f]))
    const draftByKey = new Map((drafts ?? []).map((d) => [d.key, d]))
    for (const draft of draftByKey.values())
      byKey.set(draft.key, streams.sdkView(draft, env.projectId) as EvaluableFlag)
    const getFlag = (key: string) => byKey.get(key)
    // A matched rule named as the editor numbers it: in the flag as saved (or sent), a segment's rule one rule.
    const origin = (key: string, index: number) =>
      ruleOrigin(draftByKey.get(key) ?? streams.savedFlag(env.id, key) ?? {}, index, (segment) =>
        streams.segmentSize(env.projectId, segment),
      )
    const wanted = keys ?? [...byKey.keys()]
    const answers = wanted.map((key): EvaluatedFlag => {
      const flag = byKey.get(key)
      if (!flag) return { key, value: null, variant: null, reason: 'ERROR', error: 'FLAG_NOT_FOUND' }
      const entry = entryOf(key, explain(flag, context, getFlag), flag)
      if (entry.rule && entry.rule_index !== undefined) Object.assign(entry.rule, origin(key, entry.rule_index))
      return entry
    })
    res.json({ flags: answers })
  })
  allowOnly(router, '/', 'POST')
  return router
}

function entryOf(key: string, e: Explanation, flag: EvaluableFlag): EvaluatedFlag {
  const entry: EvaluatedFlag = { key, value: e.value ?? null, variant: e.variant ?? null, reason: e.reason }
  if (e.ruleIndex !== undefined) {
    entry.rule_index = e.ruleIndex
    const rule = decidingRule(flag, e.ruleIndex)
    if (rule) entry.rule = rule
  }
  if (e.bucket !== undefined) entry.bucket = e.bucket
  if (e.errorCode !== undefined) entry.error = e.errorCode
  return entry
}

/** The matched rule's condition; a rule that matched has all three fields (the evaluator checked them). */
function decidingRule(flag: EvaluableFlag, index: number): DecidingRule | undefined {
  const rule = (flag.rules as unknown[] | undefined)?.[index] as Partial<DecidingRule> | undefined
  if (!rule || typeof rule.attribute !== 'string' || typeof rule.operator !== 'string') return undefined
  return { attribute: rule.attribute, operator: rule.operator, values: (rule.values ?? []).map(String) }
}
