import type { EvaluableFlag } from '@flagsync/protocol'
import type { EvaluationErrorCode, EvaluationReason, EvaluationResult } from './types.js'

/** The value type an OpenFeature provider was asked for (`resolveBooleanEvaluation`, `…String…`, and so on). */
export type ResolutionKind = 'boolean' | 'string' | 'number' | 'object'

/** The error codes a provider reports: the evaluator's and FLAG_NOT_FOUND, spelled as OpenFeature's `ErrorCode`. */
export type ResolutionErrorCode = EvaluationErrorCode | 'FLAG_NOT_FOUND'

/**
 * OpenFeature's `ResolutionDetails`, in plain strings: the OpenFeature providers (web and server) hand it to their
 * SDK as it is, since `ErrorCode`'s values are these strings.
 */
export interface Resolution<T> {
  value: T
  reason: EvaluationReason
  /** The served variant's name (see {@link toResolution}). */
  variant?: string
  errorCode?: ResolutionErrorCode
  errorMessage?: string
}

/**
 * What an OpenFeature provider answers for one flag: the evaluator's value and reason, or the caller's default with
 * reason ERROR and FLAG_NOT_FOUND (`found` undefined), the evaluator's error code, or TYPE_MISMATCH when the value is
 * not of the `kind` asked for. A flag that serves no value for the outcome answers the default with its reason.
 *
 * @param found the flag and its evaluation result; undefined when there is no such flag
 * @example
 * const flag = flags.get(key)
 * toResolution(key, false, 'boolean', flag && { flag, result: evaluate(flag, context, getFlag) })
 */
export function toResolution<T>(
  flagKey: string,
  defaultValue: T,
  kind: ResolutionKind,
  found:
    | { flag: EvaluableFlag; result: Omit<EvaluationResult, 'errorCode'> & { errorCode?: ResolutionErrorCode } }
    | undefined,
): Resolution<T> {
  if (!found) {
    return { value: defaultValue, reason: 'ERROR', errorCode: 'FLAG_NOT_FOUND', errorMessage: `no flag ${flagKey}` }
  }
  const { flag, result } = found
  if (result.reason === 'ERROR') {
    return {
      value: defaultValue,
      reason: 'ERROR',
      errorCode: result.errorCode ?? 'GENERAL',
      ...(result.errorMessage === undefined ? {} : { errorMessage: result.errorMessage }),
    }
  }
  const variant = variantName(flag, result.variant)
  const named = variant === undefined ? {} : { variant }
  if (result.value === undefined) return { value: defaultValue, reason: result.reason, ...named }
  if (!matchesKind(result.value, kind)) {
    return {
      value: defaultValue,
      reason: 'ERROR',
      errorCode: 'TYPE_MISMATCH',
      errorMessage: `flag ${flagKey} is not a ${kind}`,
    }
  }
  return { value: result.value as T, reason: result.reason, ...named }
}

/** OpenFeature's `targetingKey` is the bucketing `user_id`; other attributes pass through flat. */
export function fromOpenFeatureContext(context: Readonly<Record<string, unknown>>): Record<string, unknown> {
  const { targetingKey, ...rest }: Record<string, unknown> = context
  // Set on the copy rather than spread into a second one: every OFREP request reads its context through here.
  if (targetingKey !== undefined) rest.user_id = targetingKey
  return rest
}

/**
 * OpenFeature's variant is a name for the value served; the evaluator gives
 * the index of the weighted variant. A variant's own `name`, when the flag
 * gives it one, else its value when that is a string, number or boolean
 * (`"blue"`, `"3"`, `"true"`); the index only for object values, which have
 * no name to show.
 */
export function variantName(flag: EvaluableFlag, index: string | undefined): string | undefined {
  if (index === undefined) return undefined
  const variants: unknown = flag.variants
  const entry = Array.isArray(variants) ? (variants[Number(index)] as { name?: unknown; value?: unknown }) : undefined
  if (typeof entry !== 'object' || entry === null) return index
  if (typeof entry.name === 'string' && entry.name !== '') return entry.name
  const value = entry.value
  if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') return String(value)
  return index
}

function matchesKind(value: unknown, kind: ResolutionKind): boolean {
  if (kind === 'object') return typeof value === 'object' && value !== null
  return typeof value === kind
}
