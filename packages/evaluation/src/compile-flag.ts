import type { FullTargetingRule } from '@flagsync/protocol'
import { numberOf, textOf } from './attribute-value.js'
import { ROLLOUT_SEED, VARIANT_SEED } from './bucket.js'
import type { CheckedFlag } from './check-flag.js'
import { decideChecked, userIdOf } from './decide.js'
import type { Decision } from './decision.js'
import { type HashPair, type HashPrefix, murmur3From, murmur3Prefix } from './murmur3.js'
import { totalWeight } from './pick-variant.js'
import type { EvaluationContext, GetFlag } from './types.js'

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

/** How a compiled flag is decided: switched off, through `decideChecked` (prerequisites), or by the tables. */
const BY_TABLES = 0
const OFF = 1
const INTERPRETED = 2

/** Rule operators as table codes; NEVER for every rule `matchesRule` cannot judge. */
const NEVER = 0
const EQUALS = 1
const NOT_EQUALS = 2
const CONTAINS = 3
const STARTS_WITH = 4
const ENDS_WITH = 5
const GREATER = 6
const GREATER_OR_EQUAL = 7
const LESS = 8
const LESS_OR_EQUAL = 9
const OPERATORS = new Map<unknown, number>([
  ['equals', EQUALS],
  ['not_equals', NOT_EQUALS],
  ['contains', CONTAINS],
  ['starts_with', STARTS_WITH],
  ['ends_with', ENDS_WITH],
  ['greater_than', GREATER],
  ['greater_than_or_equal', GREATER_OR_EQUAL],
  ['less_than', LESS],
  ['less_than_or_equal', LESS_OR_EQUAL],
])

/** One distinct rule of a set: its attribute's index, operator code, string values (a Set for equality) and bound. */
class RuleEntry {
  constructor(
    readonly attribute: number,
    readonly operator: number,
    readonly texts: readonly string[],
    readonly set: ReadonlySet<string>,
    readonly bound: number,
  ) {}
}

/** What follows a flag's rules: the rollout, then the variant split, with the hash of `"<key>:"` taken once. */
class Rollout {
  constructor(
    readonly flag: CheckedFlag,
    readonly rollout: number,
    /** The variants' summed weights; 0: no split. */
    readonly total: number,
    readonly prefix: HashPrefix | undefined,
    /** Each variant's running total of the weights, in order (`pickVariant`'s walk, done once). */
    readonly ends: readonly number[],
    readonly firstVariant: number,
  ) {}
}

/**
 * A flag set compiled into flat tables, decided one context at a time: each
 * distinct rule (the same attribute, operator and values; flags often repeat
 * one) is a row of one table with its operator resolved to a code, its
 * `equals`/`not_equals` values in a Set and its numeric bounds parsed once and
 * reduced to the one that decides; each flag is a run of rule ids and its
 * rollout, with the murmur3 state after `"<key>:"` kept so a context hashes
 * only its user id. `begin(context)` reads each attribute the set tests once;
 * a rule is tested at most once per context, on first use. The same decisions
 * as `decideChecked` (a fast-check property holds them equal); a flag with
 * prerequisites is decided by `decideChecked` itself, since its answer reaches
 * into other flags.
 * @example
 * const set = new CompiledFlags(flags, getFlag)
 * set.begin({ user_id: 'u-1', country: 'DE' })
 * const slots = flags.map((_, i) => set.slot(i))
 */
export class CompiledFlags {
  private readonly modes: number[] = []
  private readonly firstRule: number[] = []
  private readonly ruleIds: number[] = []
  private readonly rollouts: Array<Rollout | undefined> = []
  private readonly flags: CheckedFlag[]
  private readonly attributes: string[] = []
  private readonly rules: RuleEntry[] = []
  // The context in hand: its attributes' raw values and texts, its user id, each rule's result (0: not tested yet).
  private context: EvaluationContext = {}
  private raws: unknown[] = []
  private texts: Array<string | undefined> = []
  private userId: string | undefined
  private results: Uint8Array
  private readonly hashes: HashPair = { a: 0, b: 0 }

  constructor(
    flags: readonly CheckedFlag[],
    private readonly getFlag: GetFlag | undefined,
  ) {
    this.flags = [...flags]
    const attributes = new Map<string, number>()
    const rules = new Map<string, number>()
    for (const flag of this.flags) {
      this.firstRule.push(this.ruleIds.length)
      const mode = !flag.is_enabled ? OFF : (flag.prerequisites?.length ?? 0) > 0 ? INTERPRETED : BY_TABLES
      this.modes.push(mode)
      this.rollouts.push(mode === BY_TABLES ? rolloutOf(flag) : undefined)
      if (mode !== BY_TABLES) continue
      for (const rule of flag.rules ?? []) this.ruleIds.push(this.ruleId(rule, attributes, rules))
    }
    this.firstRule.push(this.ruleIds.length)
    this.results = new Uint8Array(this.rules.length)
  }

  /** Starts a context: its attributes are read now, and every rule is tested again when first asked. */
  begin(context: EvaluationContext): void {
    this.context = context
    const { attributes, raws, texts } = this
    for (let i = 0; i < attributes.length; i++) {
      const raw = context[attributes[i] as string]
      raws[i] = raw
      texts[i] = typeof raw === 'string' ? raw : textOf(raw)
    }
    const id = context.user_id
    this.userId = typeof id === 'string' ? id : textOf(id)
    this.results.fill(0)
  }

  /** Flag `index`'s decision for the context in hand, as a slot. Throws what `decideChecked` throws. */
  slot(index: number): number {
    const mode = this.modes[index]
    if (mode === OFF) return SLOT_DISABLED
    if (mode === INTERPRETED) {
      const flag = this.flags[index] as CheckedFlag
      return slotOf(decideChecked(flag, this.context, this.getFlag), flag)
    }
    const { ruleIds, results } = this
    const first = this.firstRule[index] as number
    const end = this.firstRule[index + 1] as number
    for (let i = first; i < end; i++) {
      const id = ruleIds[i] as number
      let result = results[id] as number
      if (result === 0) {
        result = this.test(this.rules[id] as RuleEntry) ? 1 : 2
        results[id] = result
      }
      if (result === 1) return RULE_SLOT + i - first
    }
    return this.bucket(this.rollouts[index] as Rollout)
  }

  /** One rule against the context in hand, as `matchesRule` judges it. */
  private test(rule: RuleEntry): boolean {
    const operator = rule.operator
    if (operator >= GREATER) {
      const n = numberOf(this.raws[rule.attribute]) // NaN compares false
      if (operator === GREATER) return n > rule.bound
      if (operator === GREATER_OR_EQUAL) return n >= rule.bound
      if (operator === LESS) return n < rule.bound
      return n <= rule.bound
    }
    const text = this.texts[rule.attribute]
    if (text === undefined || operator === NEVER) return false
    if (operator === EQUALS) return rule.set.has(text)
    if (operator === NOT_EQUALS) return !rule.set.has(text)
    const values = rule.texts
    for (let i = 0; i < values.length; i++) {
      const value = values[i] as string
      if (
        operator === CONTAINS
          ? text.includes(value)
          : operator === STARTS_WITH
            ? text.startsWith(value)
            : text.endsWith(value)
      ) {
        return true
      }
    }
    return false
  }

  private bucket(rollout: Rollout): number {
    if (rollout.prefix === undefined) return rollout.rollout === 0 ? SLOT_OUTSIDE : SLOT_DEFAULT
    const id = this.userId
    if (id === undefined || id === '') userIdOf(rollout.flag, this.context) // throws TARGETING_KEY_MISSING
    const hashes = murmur3From(rollout.prefix, id as string, this.hashes)
    if (hashes.a % 100 >= rollout.rollout) return SLOT_OUTSIDE
    if (rollout.total === 0) return SLOT_INSIDE
    const target = hashes.b % rollout.total
    const ends = rollout.ends
    for (let i = 0; i < ends.length; i++) if (target < (ends[i] as number)) return rollout.firstVariant + i
    return rollout.firstVariant + ends.length - 1
  }

  /** The table row of `rule`, added on first sight; the same row for a rule with the same attribute, operator and values. */
  private ruleId(rule: unknown, attributes: Map<string, number>, rules: Map<string, number>): number {
    const entry = ruleEntry(rule, (name) => {
      let at = attributes.get(name)
      if (at === undefined) {
        at = this.attributes.push(name) - 1
        attributes.set(name, at)
      }
      return at
    })
    const key = `${entry.attribute}\u0000${entry.operator}\u0000${entry.bound}\u0000${JSON.stringify(entry.texts)}`
    let id = rules.get(key)
    if (id === undefined) {
      id = this.rules.push(entry) - 1
      rules.set(key, id)
    }
    return id
  }
}

/**
 * A rule's table row, with `matchesRule`'s reading of everything it cannot
 * judge (never matches): not an object, an unexpanded segment, no attribute
 * name, no values list, an unknown operator, no numeric bound. A numeric rule
 * holds when some bound does, that is against the loosest one (the smallest
 * for `>`/`>=`, the largest for `<`/`<=`).
 */
function ruleEntry(rule: unknown, attributeIndex: (name: string) => number): RuleEntry {
  const never = new RuleEntry(0, NEVER, [], new Set(), Number.NaN)
  if (typeof rule !== 'object' || rule === null) return never
  const { attribute, operator, values } = rule as FullTargetingRule
  if ((rule as FullTargetingRule).segment_key != null || typeof attribute !== 'string' || !Array.isArray(values)) {
    return never
  }
  const code = OPERATORS.get(operator) ?? NEVER
  if (code === NEVER) return never
  const texts = values.filter((v): v is string => typeof v === 'string')
  let bound = Number.NaN
  if (code >= GREATER) {
    const bounds = texts.map(numberOf).filter((n) => !Number.isNaN(n))
    if (bounds.length === 0) return never
    bound = code === GREATER || code === GREATER_OR_EQUAL ? Math.min(...bounds) : Math.max(...bounds)
  }
  return new RuleEntry(attributeIndex(attribute), code, code >= GREATER ? [] : texts, new Set(texts), bound)
}

function rolloutOf(flag: CheckedFlag): Rollout {
  const rollout = flag.rollout_percentage ?? 100
  const variants = flag.variants ?? []
  const total = totalWeight(variants)
  const firstVariant = RULE_SLOT + (flag.rules?.length ?? 0)
  // A 0 % rollout needs no bucket (nobody is inside, with or without a user id), nor 100 % without a split.
  const hashed = rollout !== 0 && (rollout !== 100 || total > 0)
  const prefix = hashed ? murmur3Prefix(`${flag.key}:`, ROLLOUT_SEED, VARIANT_SEED) : undefined
  let sum = 0
  const ends = variants.map((variant) => {
    sum += totalWeight([variant])
    return sum
  })
  return new Rollout(flag, rollout, total, prefix, ends, firstVariant)
}
