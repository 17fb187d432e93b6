import { jsonEqual } from '@flagsync/protocol'
import type { ServiceFlag } from './model.js'

const DAY_MS = 24 * 60 * 60 * 1000

/** `STALE_AFTER_DAYS` when unset. */
export const DEFAULT_STALE_AFTER_DAYS = 30

/** Why a flag is potentially stale in an environment, and since when (ISO 8601). */
export type Stale = null | { reason: 'one_value' | 'not_evaluated'; since: string }

export interface StaleInput {
  flag: ServiceFlag
  /** When the flag last changed in the environment (ms). */
  lastChangedAt: number
  /** When it was first written in the environment, as far as the change log still tells (ms). */
  createdAt: number
  /** When an SDK last evaluated it there (ms); null when never. */
  lastEvaluatedAt: number | null
  now: number
  /** `STALE_AFTER_DAYS`. */
  afterDays: number
}

/**
 * Whether a flag is potentially stale, decided from what it is and when things happened, never from the clock
 * itself (`now` is passed in):
 * - `one_value`: its answer does not depend on the context (`servesOneValue`) and it has not changed for
 *   `afterDays` days: it has served one value to everyone since `since` (its last change);
 * - `not_evaluated`: nothing evaluated it for `afterDays` days, and it has existed that long: `since` is its last
 *   evaluation, or its creation when it was never evaluated.
 * `one_value` wins when both hold: it says what to do (remove the flag, keep the value).
 */
export function staleOf({ flag, lastChangedAt, createdAt, lastEvaluatedAt, now, afterDays }: StaleInput): Stale {
  const horizon = now - afterDays * DAY_MS
  if (servesOneValue(flag) && lastChangedAt <= horizon) {
    return { reason: 'one_value', since: new Date(lastChangedAt).toISOString() }
  }
  const quietSince = lastEvaluatedAt ?? createdAt
  if (quietSince <= horizon) return { reason: 'not_evaluated', since: new Date(quietSince).toISOString() }
  return null
}

/**
 * Whether every context gets the same value: the flag is off, or on with no prerequisites and no rules and a
 * rollout and variant split whose every outcome serves one value (the evaluator's `decide` order).
 */
export function servesOneValue(flag: ServiceFlag): boolean {
  if (!flag.is_enabled) return true
  if (flag.prerequisites.length > 0 || flag.rules.length > 0) return false
  const values = servedValues(flag)
  return values.every((v) => jsonEqual(v, values[0]))
}

/** The values an enabled flag without rules or prerequisites can serve: outside the rollout, and inside it. */
function servedValues(flag: ServiceFlag): unknown[] {
  const boolean = flag.flag_type === 'boolean'
  const off = flag.disabled_value !== undefined ? flag.disabled_value : boolean ? false : undefined
  const on = flag.default_value !== undefined ? flag.default_value : boolean ? true : undefined
  const rollout = flag.rollout_percentage ?? 100
  if (rollout === 0) return [off]
  const weighted = flag.variants.filter((v) => v.weight > 0).map((v) => v.value)
  const inside = weighted.length > 0 ? weighted : [on]
  return rollout === 100 ? inside : [off, ...inside]
}
