import type { FullTargetingRule } from '@flagsync/protocol'
import { numberOf, textOf } from './attribute-value.js'
import type { EvaluationContext } from './types.js'

/**
 * Whether one targeting rule matches a context. Never throws; a rule it cannot
 * read simply does not match:
 * - a rule that still carries a `segment_key` (the service expands segments
 *   before flags reach SDKs, so an unexpanded one cannot be judged here);
 * - an unknown operator (a newer server's, as LaunchDarkly treats it);
 * - a missing or unusable attribute, for every operator including
 *   `not_equals` (as LaunchDarkly and Unleash do: "not in the list" needs a value);
 * - non-string entries in `values`, which are skipped.
 */
export function matchesRule(rule: FullTargetingRule, context: EvaluationContext): boolean {
  if (typeof rule !== 'object' || rule === null) return false
  const { attribute, operator, values } = rule
  if (rule.segment_key != null || typeof attribute !== 'string' || !Array.isArray(values)) return false
  const raw = context[attribute]
  switch (operator) {
    case 'equals':
    case 'contains':
    case 'starts_with':
    case 'ends_with': {
      const text = textOf(raw)
      return text !== undefined && someText(operator, text, values)
    }
    case 'not_equals': {
      const text = textOf(raw)
      return text !== undefined && !someText('equals', text, values)
    }
    case 'greater_than':
    case 'greater_than_or_equal':
    case 'less_than':
    case 'less_than_or_equal': {
      const n = numberOf(raw)
      return !Number.isNaN(n) && someNumber(operator, n, values)
    }
    default:
      return false
  }
}

type TextOperator = 'equals' | 'contains' | 'starts_with' | 'ends_with'
type NumberOperator = 'greater_than' | 'greater_than_or_equal' | 'less_than' | 'less_than_or_equal'

// Plain loops over the values with the operator switched per value: no closure
// per call, nothing allocated, and the match on the first hit.
function someText(operator: TextOperator, text: string, values: readonly unknown[]): boolean {
  for (let i = 0; i < values.length; i++) {
    const value = values[i]
    if (typeof value === 'string' && testText(operator, text, value)) return true
  }
  return false
}

function testText(operator: TextOperator, text: string, value: string): boolean {
  switch (operator) {
    case 'equals':
      return text === value
    case 'contains':
      return text.includes(value)
    case 'starts_with':
      return text.startsWith(value)
    case 'ends_with':
      return text.endsWith(value)
  }
}

function someNumber(operator: NumberOperator, n: number, values: readonly unknown[]): boolean {
  for (let i = 0; i < values.length; i++) {
    const value = values[i]
    // numberOf gives NaN for a non-numeric value, and NaN compares false with everything.
    if (typeof value === 'string' && testNumber(operator, n, numberOf(value))) return true
  }
  return false
}

function testNumber(operator: NumberOperator, n: number, bound: number): boolean {
  switch (operator) {
    case 'greater_than':
      return n > bound
    case 'greater_than_or_equal':
      return n >= bound
    case 'less_than':
      return n < bound
    case 'less_than_or_equal':
      return n <= bound
  }
}
