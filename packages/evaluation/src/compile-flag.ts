import type { FullTargetingRule } from '@flagsync/protocol'
import { numberOf, textOf } from './attribute-value.js'
import { ROLLOUT_SEED, VARIANT_SEED } from './bucket.js'
import type { CheckedFlag } from './check-flag.js'
import { decideChecked, userIdOf } from './decide.js'
import type { Decision } from './decision.js'
import { type HashPair, murmur3From, murmur3Prefix } from './murmur3.js'
import { totalWeight } from './pick-variant.js'
import type { EvaluationContext, GetFlag } from './types.js'

/**
 * A flag's decision for a context as a slot number (see {@link slotOf}), from a
 * form compiled once per flag set. Throws what `decideChecked` throws (a
 * missing user id for a split).
 */
export type CompiledFlag = (context: EvaluationContext) => number

/** The slots of the decisions without an index; a rule's is `RULE_SLOT + index`, a variant's after the rules. */
const SLOT_DISABLED = 0
const SLOT_OUTSIDE = 1
const SLOT_INSIDE = 2
const SLOT_DEFAULT = 3
const RULE_SLOT = 4

/** A decision's slot among a flag's answers: the four without an index, then each rule, then each variant. */
export function slotOf(decision: Decision, flag: CheckedFlag): number {
  switch (decision.kind) {
    case 'disabled':
      return SLOT_DISABLED
    case 'outside':
      return SLOT_OUTSIDE
    case 'inside':
      return SLOT_INSIDE
    case 'default':
      return SLOT_DEFAULT
    case 'rule':
      return RULE_SLOT + decision.index
    case 'variant':
      return RULE_SLOT + (flag.rules?.length ?? 0) + decision.index
  }
}

/** The decision of a slot: {@link slotOf} read backwards. */
export function decisionOf(slot: number, flag: CheckedFlag): Decision {
  if (slot < RULE_SLOT) return { kind: (['disabled', 'outside', 'inside', 'default'] as const)[slot] ?? 'default' }
  const rules = flag.rules?.length ?? 0
  const index = slot - RULE_SLOT
  return index < rules ? { kind: 'rule', index } : { kind: 'variant', index: index - rules }
}

/**
 * Compiles a checked flag into one function per flag set: each rule's operator
 * resolved to a predicate over values read once (`equals`/`not_equals` as a
 * Set, numeric bounds parsed once and reduced to the one that decides), the
 * rollout's hash state after `"<key>:"` computed once, and the variant weights
 * summed once. The same decisions as `decideChecked` (a fast-check property
 * holds them equal); a flag with prerequisites is decided by `decideChecked`
 * itself, since its answer reaches into other flags.
 * @example
 * const slot = compileFlag(flag, getFlag)({ user_id: 'u-1', country: 'DE' })
 */
export function compileFlag(flag: CheckedFlag, getFlag: GetFlag | undefined, shared?: SharedRules): CompiledFlag {
  if (!flag.is_enabled) return () => SLOT_DISABLED
  if ((flag.prerequisites?.length ?? 0) > 0) return (context) => slotOf(decideChecked(flag, context, getFlag), flag)
  const tests = (flag.rules ?? []).map((rule) => {
    const test = compileRule(rule)
    return shared && test !== never ? shared.share(rule as FullTargetingRule, test) : test
  })
  const after = compileRollout(flag)
  const count = tests.length
  if (count === 0) return after
  return (context) => {
    for (let i = 0; i < count; i++) if ((tests[i] as RuleTest)(context)) return RULE_SLOT + i
    return after(context)
  }
}

type RuleTest = (context: EvaluationContext) => boolean

/**
 * Rule results shared by the compiled flags of one set: flags often repeat a
 * rule (the same attribute, operator and values), which is then tested once
 * per context. Call `next()` before each context: results are kept for the
 * context in hand only.
 * @example
 * const shared = new SharedRules()
 * const runs = flags.map((f) => compileFlag(f, getFlag, shared))
 * shared.next()
 * const slots = runs.map((run) => run(context))
 */
export class SharedRules {
  private readonly ids = new Map<string, number>()
  private readonly tests: RuleTest[] = []
  private readonly rounds: number[] = []
  private readonly results: boolean[] = []
  private round = 0

  /** Starts a new context: every shared rule is tested again when first asked. */
  next(): void {
    this.round++
  }

  /** The test of `rule` (compiled as `test`) through the results of the context in hand. */
  share(rule: FullTargetingRule, test: RuleTest): RuleTest {
    const key = `${rule.attribute}\u0000${rule.operator}\u0000${JSON.stringify(rule.values)}`
    let id = this.ids.get(key)
    if (id === undefined) {
      id = this.tests.length
      this.ids.set(key, id)
      this.tests.push(test)
      this.rounds.push(-1)
      this.results.push(false)
    }
    const at = id
    return (context) => {
      if (this.rounds[at] === this.round) return this.results[at] as boolean
      const result = (this.tests[at] as RuleTest)(context)
      this.rounds[at] = this.round
      this.results[at] = result
      return result
    }
  }
}

const never: RuleTest = () => false

/** One rule as a predicate, with `matchesRule`'s reading of everything it cannot judge (never matches). */
function compileRule(rule: unknown): RuleTest {
  if (typeof rule !== 'object' || rule === null) return never
  const { attribute, operator, values } = rule as FullTargetingRule
  if ((rule as FullTargetingRule).segment_key != null || typeof attribute !== 'string' || !Array.isArray(values)) {
    return never
  }
  const texts = values.filter((v): v is string => typeof v === 'string')
  const text = (context: EvaluationContext): string | undefined => {
    const raw = context[attribute]
    return typeof raw === 'string' ? raw : textOf(raw)
  }
  switch (operator) {
    case 'equals':
    case 'not_equals': {
      const set = new Set(texts)
      const inList = operator === 'equals'
      return (context) => {
        const t = text(context)
        return t !== undefined && set.has(t) === inList
      }
    }
    case 'contains':
      return (context) => someText(text(context), texts, (t, v) => t.includes(v))
    case 'starts_with':
      return (context) => someText(text(context), texts, (t, v) => t.startsWith(v))
    case 'ends_with':
      return (context) => someText(text(context), texts, (t, v) => t.endsWith(v))
    default:
      return compileNumeric(rule as FullTargetingRule, attribute, texts)
  }
}

function someText(text: string | undefined, values: readonly string[], test: (t: string, v: string) => boolean) {
  if (text === undefined) return false
  for (let i = 0; i < values.length; i++) if (test(text, values[i] as string)) return true
  return false
}

/**
 * A numeric rule: "some bound holds" is the test against the loosest bound (the
 * smallest for `>`/`>=`, the largest for `<`/`<=`); unparsable values never hold.
 */
function compileNumeric(rule: FullTargetingRule, attribute: string, texts: readonly string[]): RuleTest {
  const bounds = texts.map(numberOf).filter((n) => !Number.isNaN(n))
  if (bounds.length === 0) return never
  const low = Math.min(...bounds)
  const high = Math.max(...bounds)
  const number = (context: EvaluationContext) => numberOf(context[attribute]) // NaN compares false
  switch (rule.operator) {
    case 'greater_than':
      return (context) => number(context) > low
    case 'greater_than_or_equal':
      return (context) => number(context) >= low
    case 'less_than':
      return (context) => number(context) < high
    case 'less_than_or_equal':
      return (context) => number(context) <= high
    default:
      return never // an unknown operator (a newer server's) never matches
  }
}

/** What follows the rules: the rollout, then the variant split, with the hash of `"<key>:"` taken once. */
function compileRollout(flag: CheckedFlag): CompiledFlag {
  const rollout = flag.rollout_percentage ?? 100
  if (rollout === 0) return () => SLOT_OUTSIDE
  const variants = flag.variants
  const total = variants == null ? 0 : totalWeight(variants)
  if (rollout === 100 && total === 0) return () => SLOT_DEFAULT
  const prefix = murmur3Prefix(`${flag.key}:`, ROLLOUT_SEED, VARIANT_SEED)
  const ends = cumulativeWeights(variants ?? [])
  const firstVariant = RULE_SLOT + (flag.rules?.length ?? 0)
  const hashes: HashPair = { a: 0, b: 0 }
  return (context) => {
    murmur3From(prefix, userIdOf(flag, context), hashes)
    if (hashes.a % 100 >= rollout) return SLOT_OUTSIDE
    if (total === 0) return SLOT_INSIDE
    const target = hashes.b % total
    for (let i = 0; i < ends.length; i++) if (target < (ends[i] as number)) return firstVariant + i
    return firstVariant + ends.length - 1
  }
}

/** Each variant's running total of the weights `totalWeight` sums, in order (`pickVariant`'s walk, done once). */
function cumulativeWeights(variants: readonly unknown[]): number[] {
  let sum = 0
  return variants.map((variant) => {
    sum += totalWeight([variant])
    return sum
  })
}
