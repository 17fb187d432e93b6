import type { FlagType } from '@flagsync/protocol'
import { EvaluationError } from './errors.js'

/** A flag whose top-level fields were checked. List elements are still unknown. */
export interface CheckedFlag {
  key: string
  is_enabled: boolean
  rollout_percentage?: number | null
  rules?: readonly unknown[] | null
  flag_type?: FlagType | null
  default_value?: unknown
  disabled_value?: unknown
  variants?: readonly unknown[] | null
  prerequisites?: readonly unknown[] | null
}

/**
 * Checks the top-level fields evaluation reads, so that a malformed flag fails
 * as a whole (PARSE_ERROR for every context) instead of misbehaving for some.
 * Absent and null mean "use the default" for every optional field. List
 * elements are checked where they are read: an unreadable rule does not match,
 * an unusable weight counts as 0, an unreadable prerequisite is not satisfied.
 */
export function checkFlag(flag: unknown): asserts flag is CheckedFlag {
  if (typeof flag !== 'object' || flag === null || Array.isArray(flag)) throw parseError('', 'a flag must be an object')
  const f = flag as Record<string, unknown>
  const key = f.key
  if (typeof key !== 'string') throw parseError('', 'key must be a string')
  if (typeof f.is_enabled !== 'boolean') throw parseError(key, 'is_enabled must be a boolean')
  const rollout = f.rollout_percentage
  if (rollout != null && !(Number.isInteger(rollout) && (rollout as number) >= 0 && (rollout as number) <= 100)) {
    throw parseError(key, 'rollout_percentage must be an integer from 0 to 100, or null')
  }
  if (!isFlagType(f.flag_type)) throw parseError(key, 'flag_type must be boolean, string, integer or json')
  if (!isList(f.rules)) throw parseError(key, 'rules must be an array')
  if (!isList(f.variants)) throw parseError(key, 'variants must be an array')
  if (!isList(f.prerequisites)) throw parseError(key, 'prerequisites must be an array')
}

function isList(value: unknown): boolean {
  return value == null || Array.isArray(value)
}

function isFlagType(value: unknown): boolean {
  return value == null || value === 'boolean' || value === 'string' || value === 'integer' || value === 'json'
}

function parseError(key: string, message: string): EvaluationError {
  return new EvaluationError('PARSE_ERROR', key === '' ? message : `flag "${key}": ${message}`)
}
