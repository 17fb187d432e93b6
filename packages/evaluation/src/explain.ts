import type { EvaluableFlag } from '@flagsync/protocol'
import { bucket } from './bucket.js'
import type { CheckedFlag } from './check-flag.js'
import { userIdOf } from './decide.js'
import type { Decision } from './decision.js'
import { evaluateObserved } from './evaluate.js'
import type { EvaluationContext, EvaluationResult, GetFlag } from './types.js'

/** An evaluation result with what decided it. */
export interface Explanation extends EvaluationResult {
  /** The index of the rule that matched (reason `TARGETING_MATCH`). */
  ruleIndex?: number
  /** The context's rollout bucket, 0–99, when the flag split users by rollout or variants (reason `SPLIT`). */
  bucket?: number
}

/**
 * `evaluate`, plus the deciding rule index or rollout bucket: the same
 * decision every client reaches, for "why does this user get that value".
 *
 * @example
 * explain(flag, { user_id: 'u-42', country: 'NL' }, getFlag)
 * // { value: 'dark', reason: 'TARGETING_MATCH', ruleIndex: 0 }
 */
export function explain(flag: EvaluableFlag, context?: EvaluationContext | null, getFlag?: GetFlag): Explanation {
  let decision: Decision | undefined
  let userId: string | undefined
  const result: Explanation = evaluateObserved(flag, context, getFlag, (d, ctx) => {
    decision = d
    // Only a split hashes the user id; decide() has already refused a split without one.
    if (d.kind === 'inside' || d.kind === 'outside' || d.kind === 'variant') {
      userId = splitUserId(flag as unknown as CheckedFlag, ctx)
    }
  })
  if (result.reason === 'ERROR' || decision === undefined) return result
  if (decision.kind === 'rule') return { ...result, ruleIndex: decision.index }
  if (userId !== undefined) return { ...result, bucket: bucket(flag.key, userId) }
  return result
}

// A 0 % rollout decides "outside" without a user id; it then has no bucket.
function splitUserId(flag: CheckedFlag, context: EvaluationContext): string | undefined {
  try {
    return userIdOf(flag, context)
  } catch {
    return undefined
  }
}
