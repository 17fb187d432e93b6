import type { EvaluableFlag } from '@flagsync/protocol'
import type { CheckedFlag } from './check-flag.js'
import { DISABLED, decide } from './decide.js'
import type { Decision } from './decision.js'
import { EvaluationError, PrerequisiteCycle } from './errors.js'
import { failure, present } from './present.js'
import type { EvaluationContext, EvaluationResult, GetFlag } from './types.js'

const EMPTY: EvaluationContext = Object.freeze({})

/**
 * Evaluates a flag for a context. Pure and synchronous, and it never throws:
 * a malformed flag or context, a `getFlag` that throws, anything unexpected
 * becomes `reason: 'ERROR'` with an `errorCode` and `value: undefined`.
 *
 * @param flag a flag service (full) or flat API flag (any shape is tolerated)
 * @param context flat attributes; `user_id` is the bucketing id
 * @param getFlag resolves prerequisites by key; without it every prerequisite fails
 * @example
 * const { value } = evaluate(flag, { user_id: 'u-42', country: 'DE' })
 */
export function evaluate(flag: EvaluableFlag, context?: EvaluationContext | null, getFlag?: GetFlag): EvaluationResult {
  return evaluateObserved(flag, context, getFlag)
}

/**
 * `evaluate`, also handing the decision to `observe` (when one was reached):
 * `explain` reads the deciding rule or bucket from it without deciding twice.
 */
export function evaluateObserved(
  flag: EvaluableFlag,
  context: EvaluationContext | null | undefined,
  getFlag: GetFlag | undefined,
  observe?: (decision: Decision, context: EvaluationContext) => void,
): EvaluationResult {
  try {
    const ctx = context ?? EMPTY
    if (typeof ctx !== 'object') return failure('INVALID_CONTEXT', 'the context must be an object of attributes')
    const decision = decideOrDisable(flag, ctx, getFlag)
    observe?.(decision, ctx)
    // decide() has checked the flag's shape by the time it returns.
    return present(flag as unknown as CheckedFlag, decision)
  } catch (error) {
    if (error instanceof EvaluationError) return failure(error.code, error.message)
    return failure('GENERAL', error instanceof Error ? error.message : 'a non-Error value was thrown')
  }
}

/**
 * A prerequisite cycle is a configuration the service should have refused, or
 * a half-applied update; serving the flag's disabled result is the safe answer
 * (LaunchDarkly reports an error; the spec asks for the disabled result).
 */
function decideOrDisable(flag: unknown, context: EvaluationContext, getFlag: GetFlag | undefined): Decision {
  try {
    return decide(flag, context, getFlag)
  } catch (error) {
    if (error instanceof PrerequisiteCycle) return DISABLED
    throw error
  }
}
