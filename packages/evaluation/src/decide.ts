import type { FullTargetingRule } from '@flagsync/protocol'
import { jsonEqual } from '@flagsync/protocol/json-equal'
import { textOf } from './attribute-value.js'
import { ROLLOUT_SEED, VARIANT_SEED } from './bucket.js'
import { type CheckedFlag, checkFlag } from './check-flag.js'
import type { Decision } from './decision.js'
import { EvaluationError, PrerequisiteCycle } from './errors.js'
import { matchesRule } from './match-rule.js'
import { type HashPair, murmur3Pair } from './murmur3.js'
import { pickVariant, totalWeight } from './pick-variant.js'
import { servedValue } from './present.js'
import type { EvaluationContext, GetFlag } from './types.js'

export const DISABLED: Decision = { kind: 'disabled' }
const OUTSIDE: Decision = { kind: 'outside' }
const INSIDE: Decision = { kind: 'inside' }
const DEFAULT: Decision = { kind: 'default' }

/**
 * Decides a flag in the spec's order: master switch, prerequisites, rules
 * (first match wins, and a match bypasses the rollout), rollout, variants.
 * `path` holds the keys of the flags whose prerequisites are being checked.
 */
export function decide(
  flag: unknown,
  context: EvaluationContext,
  getFlag: GetFlag | undefined,
  path?: string[],
): Decision {
  checkFlag(flag)
  return decideChecked(flag, context, getFlag, path)
}

/** `decide` for a flag whose shape was already checked (a prepared flag set checks each flag once per change). */
export function decideChecked(
  flag: CheckedFlag,
  context: EvaluationContext,
  getFlag: GetFlag | undefined,
  path?: string[],
): Decision {
  if (!flag.is_enabled) return DISABLED
  const prerequisites = flag.prerequisites
  if (prerequisites != null && prerequisites.length > 0) {
    if (!prerequisitesHold(flag, prerequisites, context, getFlag, path ?? [])) return DISABLED
  }
  const rules = flag.rules
  if (rules != null) {
    for (let i = 0; i < rules.length; i++) {
      if (matchesRule(rules[i] as FullTargetingRule, context)) return { kind: 'rule', index: i }
    }
  }
  const rollout = flag.rollout_percentage ?? 100
  // A 0 % rollout needs no bucket: nobody is inside, with or without a user id.
  if (rollout === 0) return OUTSIDE
  const variants = flag.variants
  const total = variants == null ? 0 : totalWeight(variants)
  if (rollout === 100 && total === 0) return DEFAULT
  // One hashing pass gives both buckets: bucket(key, id) and bucket(key, id, VARIANT_SEED, total).
  const hashes = murmur3Pair(flag.key, userIdOf(flag, context), ROLLOUT_SEED, VARIANT_SEED, scratch)
  if (hashes.a % 100 >= rollout) return OUTSIDE
  if (variants != null && total > 0) return { kind: 'variant', index: pickVariant(variants, hashes.b % total) }
  return INSIDE
}

// Read right after it is written, before anything can call decide() again.
const scratch: HashPair = { a: 0, b: 0 }

/**
 * The bucketing id. A split without one would have to guess (LaunchDarkly puts
 * every keyless user in bucket 0, i.e. inside any rollout), so like flagd we
 * refuse: TARGETING_KEY_MISSING, and the caller's fallback is served.
 */
export function userIdOf(flag: CheckedFlag, context: EvaluationContext): string {
  const id = textOf(context.user_id)
  if (id === undefined || id === '') {
    throw new EvaluationError('TARGETING_KEY_MISSING', `flag "${flag.key}" splits users but the context has no user_id`)
  }
  return id
}

function prerequisitesHold(
  flag: CheckedFlag,
  prerequisites: readonly unknown[],
  context: EvaluationContext,
  getFlag: GetFlag | undefined,
  path: string[],
): boolean {
  path.push(flag.key)
  try {
    for (let i = 0; i < prerequisites.length; i++) if (!holds(prerequisites[i], context, getFlag, path)) return false
    return true
  } finally {
    path.pop()
  }
}

/**
 * One prerequisite. With `required_value`, the prerequisite must resolve to
 * that value (JSON equality), whatever the reason, so `false` can require a
 * flag to be off. Without it, the prerequisite must be on for this context:
 * switched on, its own prerequisites met, and either a rule matched or the
 * context is inside its rollout; the value it serves does not matter. A
 * missing or unreadable prerequisite is not satisfied.
 */
function holds(
  prerequisite: unknown,
  context: EvaluationContext,
  getFlag: GetFlag | undefined,
  path: string[],
): boolean {
  if (typeof prerequisite !== 'object' || prerequisite === null) return false
  const { flag_key: key, required_value: required } = prerequisite as { flag_key?: unknown; required_value?: unknown }
  if (typeof key !== 'string') return false
  if (path.includes(key)) throw new PrerequisiteCycle([...path, key])
  const target = getFlag?.(key)
  // A store that answers with another flag would defeat the cycle guard, which goes by key.
  if (target == null || target.key !== key) return false
  const decision = decide(target, context, getFlag, path)
  if (required === undefined) return decision.kind !== 'disabled' && decision.kind !== 'outside'
  return jsonEqual(servedValue(target as CheckedFlag, decision), required)
}
