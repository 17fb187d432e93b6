import type { FullTargetingRule } from '@flagsync/protocol'
import type { StoredFlag } from '@flagsync/store'
import type { SegmentRule } from './model.js'

/** Segments live in the flag store under this scope prefix + project id, so their edits reach the change log. */
export const SEGMENT_SCOPE_PREFIX = 'seg:'
export const segmentScope = (projectId: string) => `${SEGMENT_SCOPE_PREFIX}${projectId}`
export const isSegmentScope = (scope: string) => scope.startsWith(SEGMENT_SCOPE_PREFIX)
export const projectOfSegmentScope = (scope: string) => scope.slice(SEGMENT_SCOPE_PREFIX.length)

/** The conditions of a segment by key; undefined when there is no such segment. */
export type SegmentLookup = (key: string) => readonly SegmentRule[] | undefined

/** Whether any rule of the flag references a segment (most do not, and then the stored JSON is served as is). */
export function referencesSegments(flag: StoredFlag): boolean {
  const rules = flag.rules
  return Array.isArray(rules) && rules.some((r) => isSegmentRule(r))
}

/** The segment keys a flag's rules reference. */
export function segmentKeysOf(flag: StoredFlag): Set<string> {
  const keys = new Set<string>()
  if (Array.isArray(flag.rules)) for (const r of flag.rules) if (isSegmentRule(r)) keys.add(r.segment_key)
  return keys
}

function isSegmentRule(rule: unknown): rule is FullTargetingRule & { segment_key: string } {
  return (
    typeof rule === 'object' && rule !== null && typeof (rule as { segment_key?: unknown }).segment_key === 'string'
  )
}

/**
 * The flag as SDKs receive it. A segment is the OR of its conditions, so a
 * rule `{segment_key, variant}` becomes one rule per condition of the segment,
 * in order, each carrying the rule's `variant`. With "first match wins" that
 * is exactly "the user is in the segment": the expanded flag uses the flag service's
 * rule shape only, so every SDK and the shared evaluator read it unchanged. A
 * segment with no conditions, or one that does not exist (any more), matches
 * nobody, so its rule disappears.
 */
export function expandFlag(flag: StoredFlag, segments: SegmentLookup): StoredFlag {
  if (!referencesSegments(flag)) return flag
  const rules: unknown[] = []
  for (const rule of flag.rules as unknown[]) {
    if (!isSegmentRule(rule)) {
      rules.push(rule)
      continue
    }
    const conditions = segments(rule.segment_key) ?? []
    for (const c of conditions) {
      rules.push(
        rule.variant === undefined
          ? { attribute: c.attribute, operator: c.operator, values: c.values }
          : { attribute: c.attribute, operator: c.operator, values: c.values, variant: rule.variant },
      )
    }
  }
  return { ...flag, rules }
}
