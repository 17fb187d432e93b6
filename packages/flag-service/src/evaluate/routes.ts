import { type Explanation, explain } from '@flagsync/evaluation'
import type { EvaluableFlag, Issue } from '@flagsync/protocol'
import { parseOr422 } from '@flagsync/server-kit'
import { Router } from 'express'
import { environmentOf, requireProjectRole } from '../auth/guards.js'
import { environmentIssues } from '../flags/checks.js'
import { type ServiceFlag, unprocessable } from '../flags/model.js'
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
    assertDraftsFit(drafts ?? [], byKey, (segment) => streams.segmentSize(env.projectId, segment) !== undefined)
    for (const draft of draftByKey.values())
      byKey.set(draft.key, streams.sdkView(draft, env.projectId) as EvaluableFlag)
    const getFlag = (key: string) => byKey.get(key)
    // A matched rule named as the editor numbers it: in the flag as saved (or sent), a segment's rule one rule.
    const origin = (key: string, index: number) =>
      ruleOrigin(
        draftByKey.get(key) ?? streams.savedFlag(env.id, key) ?? {},
        index,
        (segment) => streams.segmentSize(env.projectId, segment) ?? 0,
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

/**
 * Unsaved flags are evaluated only where they could be saved: a key sent twice, a segment the project does not
 * have, a prerequisite neither saved here nor sent alongside (or the other checks of a save) is a 422 naming
 * `flags[i].<field>`, rather than an answer for a flag that cannot exist.
 */
function assertDraftsFit(
  drafts: ServiceFlag[],
  saved: ReadonlyMap<string, EvaluableFlag>,
  hasSegment: (key: string) => boolean,
): void {
  const environment = new Map(saved as ReadonlyMap<string, unknown> as ReadonlyMap<string, ServiceFlag>)
  for (const draft of drafts) environment.set(draft.key, draft)
  const seen = new Set<string>()
  const issues = drafts.flatMap((draft, i): Issue[] => {
    if (seen.has(draft.key)) return [{ path: `flags[${i}].key`, message: `${JSON.stringify(draft.key)} is sent twice` }]
    seen.add(draft.key)
    return environmentIssues(draft, environment, { has: hasSegment }).map((issue) => ({
      path: `flags[${i}].${issue.path}`,
      message: issue.message,
    }))
  })
  if (issues.length > 0) throw unprocessable('evaluation request', issues)
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
