import type { FlagType, FlagValue } from '@flagsync/protocol'
import type { CheckedFlag } from './check-flag.js'
import type { Decision } from './decision.js'
import type { EvaluationErrorCode, EvaluationResult } from './types.js'

/**
 * The value a decision serves. Boolean flags default to `true` when on and
 * `false` when off; other types have no implicit values, so an absent
 * `default_value`/`disabled_value` yields `undefined` (the caller's fallback).
 */
export function servedValue(flag: CheckedFlag, decision: Decision): unknown {
  switch (decision.kind) {
    case 'disabled':
    case 'outside':
      return flag.disabled_value !== undefined ? flag.disabled_value : isBoolean(flag) ? false : undefined
    case 'rule': {
      // A rule without a variant serves the default value.
      const variant = (flag.rules?.[decision.index] as { variant?: unknown } | undefined)?.variant
      return variant !== undefined ? variant : defaultValue(flag)
    }
    case 'variant':
      return (flag.variants?.[decision.index] as { value?: unknown } | undefined)?.value
    default:
      return defaultValue(flag)
  }
}

function defaultValue(flag: CheckedFlag): unknown {
  return flag.default_value !== undefined ? flag.default_value : isBoolean(flag) ? true : undefined
}

function isBoolean(flag: CheckedFlag): boolean {
  return flag.flag_type == null || flag.flag_type === 'boolean'
}

/** The result of a decision, after checking its value against `flag_type`. */
export function present(flag: CheckedFlag, decision: Decision): EvaluationResult {
  const value = servedValue(flag, decision) as FlagValue | undefined
  const type = flag.flag_type ?? 'boolean'
  if (value !== undefined && !fitsType(type, value)) {
    return failure('TYPE_MISMATCH', `flag "${flag.key}" is of type ${type} but would serve ${kindOf(value)}`)
  }
  switch (decision.kind) {
    case 'disabled':
      return { value, reason: 'DISABLED' }
    case 'rule':
      return { value, reason: 'TARGETING_MATCH' }
    case 'variant':
      return { value, reason: 'SPLIT', variant: String(decision.index) }
    case 'outside':
    case 'inside':
      return { value, reason: 'SPLIT' }
    default:
      return { value, reason: 'DEFAULT' }
  }
}

/**
 * Whether `value` is a value of `type`: integers are safe integers (what every
 * JSON parser reads back exactly), json is any JSON value. The flag service
 * checks values on save with this same function.
 */
export function fitsType(type: FlagType, value: unknown): boolean {
  switch (type) {
    case 'boolean':
      return typeof value === 'boolean'
    case 'string':
      return typeof value === 'string'
    case 'integer':
      return Number.isSafeInteger(value)
    case 'json':
      return true
  }
}

/** Names what was served instead of quoting it: a value can be large, or not serializable at all. */
function kindOf(value: unknown): string {
  if (value === null) return 'null'
  if (Array.isArray(value)) return 'an array'
  if (typeof value === 'number') return Number.isInteger(value) ? 'an integer' : 'a non-integer number'
  return typeof value === 'object' ? 'an object' : `a ${typeof value}`
}

export function failure(code: EvaluationErrorCode, message: string): EvaluationResult {
  return { value: undefined, reason: 'ERROR', errorCode: code, errorMessage: message }
}
