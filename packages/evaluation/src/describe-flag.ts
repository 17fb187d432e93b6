import type { CheckedFlag } from './check-flag.js'
import { totalWeight, weightOf } from './pick-variant.js'
import { servedValue } from './present.js'

/** A condition of a rule or segment: the attribute's value compared with one of `values` by `operator`. */
export interface Condition {
  attribute?: unknown
  operator?: unknown
  values?: unknown
}

/** A segment as `describeFlag` names it: its key, and its conditions (any one of them places a user in it). */
export interface DescribedSegment {
  key: string
  rules?: readonly Condition[] | null
}

const OPERATOR_WORDS: Readonly<Record<string, string>> = {
  equals: 'is',
  not_equals: 'is not',
  contains: 'contains',
  starts_with: 'starts with',
  ends_with: 'ends with',
  greater_than: 'is more than',
  greater_than_or_equal: 'is at least',
  less_than: 'is less than',
  less_than_or_equal: 'is at most',
}

/**
 * One plain-language sentence of who gets what from a flag, in the order the
 * evaluator decides: switch, prerequisites, rules, rollout, variants. Values
 * come from the same `servedValue` every client serves; a flag of the flag
 * service or the flat API, segment references named (and their conditions
 * spelled out when `segments` holds them).
 *
 * @example
 * describeFlag({ key: 'theme', is_enabled: true, flag_type: 'string', default_value: 'light',
 *   rollout_percentage: 25, rules: [{ attribute: 'country', operator: 'equals', values: ['NL'], variant: 'dark' }] })
 * // 'Users matching rule 1 (country is NL) get `dark`; of everyone else, 25 % get `light`, the rest the fallback'
 */
export function describeFlag(flag: unknown, segments?: readonly DescribedSegment[]): string {
  if (typeof flag !== 'object' || flag === null) return 'Not a flag.'
  const f = flag as CheckedFlag
  const off = valueText(servedValue(f, { kind: 'disabled' }))
  if (!f.is_enabled) return `Off: everyone gets ${off}`
  const parts: string[] = []
  const rules = Array.isArray(f.rules) ? f.rules : []
  rules.forEach((rule, i) => {
    const served = valueText(servedValue(f, { kind: 'rule', index: i }))
    parts.push(`${i === 0 ? 'users' : 'those'} matching rule ${i + 1} (${ruleText(rule, segments)}) get ${served}`)
  })
  parts.push(restText(f, rules.length > 0, off))
  const sentence = capitalize(parts.join('; '))
  const prerequisites = Array.isArray(f.prerequisites) ? f.prerequisites : []
  if (prerequisites.length === 0) return sentence
  return `Only when ${prerequisites.map(prerequisiteText).join(' and ')}: ${lower(sentence)}; otherwise everyone gets ${off}`
}

/** Everyone the rules left: the default, the rollout's share, and the variants' shares of it. */
function restText(flag: CheckedFlag, afterRules: boolean, off: string): string {
  const rollout = typeof flag.rollout_percentage === 'number' ? flag.rollout_percentage : 100
  const variants = Array.isArray(flag.variants) ? flag.variants : []
  const total = totalWeight(variants)
  const everyone = afterRules ? 'everyone else' : 'everyone'
  if (rollout <= 0) return `${everyone} gets ${off}`
  if (total === 0) {
    const on = valueText(servedValue(flag, { kind: 'default' }))
    if (rollout >= 100) return `${everyone} gets ${on}`
    return `${afterRules ? 'of everyone else, ' : ''}${percent(rollout)} get ${on}, the rest ${off}`
  }
  const weighted = variants
    .map((v, i) => ({ weight: weightOf(v), value: servedValue(flag, { kind: 'variant', index: i }) }))
    .filter((s) => s.weight > 0)
  // One variant served to all of them is no split: say who gets it, not "100 % get".
  const only = weighted.length === 1 ? weighted[0] : undefined
  if (only && rollout >= 100) return `${everyone} gets ${valueText(only.value)}`
  const split = weighted.map((s) => `${percent((rollout * s.weight) / total)} get ${valueText(s.value)}`).join(', ')
  const rest = rollout >= 100 ? '' : `, the rest ${off}`
  return `${afterRules ? 'of everyone else, ' : ''}${split}${rest}`
}

function ruleText(rule: unknown, segments: readonly DescribedSegment[] | undefined): string {
  if (typeof rule !== 'object' || rule === null) return 'unreadable, matches nobody'
  const segmentKey = (rule as { segment_key?: unknown }).segment_key
  if (typeof segmentKey !== 'string') return conditionText(rule as Condition)
  const segment = segments?.find((s) => s.key === segmentKey)
  if (!segment) return `in segment \`${segmentKey}\``
  const conditions = Array.isArray(segment.rules) ? segment.rules : []
  if (conditions.length === 0) return `in segment \`${segmentKey}\`, which has no conditions and matches nobody`
  return `in segment \`${segmentKey}\`: ${conditions.map(conditionText).join(', or ')}`
}

/**
 * One condition in words, as `describeFlag` writes it and the dashboard's
 * "test a user" names the rule that decided.
 *
 * @example
 * describeCondition({ attribute: 'country', operator: 'equals', values: ['NL', 'BE'] }) // 'country is NL or BE'
 */
export function describeCondition(condition: Condition): string {
  return conditionText(condition)
}

function conditionText(condition: Condition): string {
  const attribute = typeof condition.attribute === 'string' ? condition.attribute : '?'
  const operator = typeof condition.operator === 'string' ? condition.operator : '?'
  const words = OPERATOR_WORDS[operator] ?? operator
  const values = Array.isArray(condition.values) ? condition.values.map((v) => (v === '' ? 'empty' : String(v))) : []
  // `not_equals` holds when the value is none of them: "is not A nor B"; the others hold for any one.
  const joiner = operator === 'not_equals' ? ' nor ' : ' or '
  return `${attribute} ${words} ${values.join(joiner)}`
}

function prerequisiteText(prerequisite: unknown): string {
  const p = (typeof prerequisite === 'object' && prerequisite !== null ? prerequisite : {}) as {
    flag_key?: unknown
    required_value?: unknown
  }
  const key = typeof p.flag_key === 'string' ? p.flag_key : '?'
  return p.required_value === undefined ? `\`${key}\` is on` : `\`${key}\` is ${valueText(p.required_value)}`
}

/** A value as the sentence shows it: strings bare, other JSON as JSON, no value as the caller's fallback. */
function valueText(value: unknown): string {
  if (value === undefined) return 'the fallback'
  // Empty backticks read as a typo.
  if (value === '') return 'an empty string'
  return `\`${typeof value === 'string' ? value : JSON.stringify(value)}\``
}

/** A share of users, to two decimals at most: `25 %`, `18.75 %`. */
function percent(share: number): string {
  return `${Math.round(share * 100) / 100} %`
}

const capitalize = (text: string) => text.charAt(0).toUpperCase() + text.slice(1)
const lower = (text: string) => text.charAt(0).toLowerCase() + text.slice(1)
