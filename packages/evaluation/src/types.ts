import type { EvaluableFlag, FlagValue } from '@flagsync/protocol'

/**
 * The attributes a flag is evaluated against: a flat map, as in an impression's
 * `context`. `user_id` is the bucketing id for rollouts and variant splits.
 * Strings, finite numbers and booleans are usable; anything else counts as missing.
 */
export type EvaluationContext = Readonly<Record<string, unknown>>

/** OpenFeature's reasons, limited to the ones this evaluator can produce. */
export type EvaluationReason = 'DISABLED' | 'TARGETING_MATCH' | 'SPLIT' | 'DEFAULT' | 'ERROR'

/** OpenFeature's error codes that evaluation itself can raise. */
export type EvaluationErrorCode =
  | 'PARSE_ERROR'
  | 'TYPE_MISMATCH'
  | 'TARGETING_KEY_MISSING'
  | 'INVALID_CONTEXT'
  | 'GENERAL'

/**
 * The outcome of one evaluation, shaped like OpenFeature's `ResolutionDetails`.
 *
 * `value` is `undefined` when the flag defines no value for this outcome (a
 * non-boolean flag without `default_value`/`disabled_value`) and on every
 * error: the caller's fallback applies, as in `result.value ?? fallback`
 * (use `=== undefined` if the flag may serve JSON `null`).
 */
export interface EvaluationResult {
  /** The value served, or undefined (see above). */
  value: FlagValue | undefined
  /** Why this value: off, a rule matched, a rollout or variant split, the default, or an error. */
  reason: EvaluationReason
  /** Index (as a string) of the weighted variant served; only on a variant split. */
  variant?: string
  /** Set exactly when `reason` is `ERROR`. */
  errorCode?: EvaluationErrorCode
  /** What was wrong, for logs (e.g. which prerequisite is missing); only with `errorCode`. */
  errorMessage?: string
}

/** Looks up a prerequisite by key; `undefined` when the flag does not exist. */
export type GetFlag = (key: string) => EvaluableFlag | undefined
