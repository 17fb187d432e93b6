/** Where a rule of the flag as SDKs receive it comes from in the flag as saved. */
export interface RuleOrigin {
  index: number
  segment_key?: string
}

/**
 * The saved rule behind the expanded rule at `expandedIndex`: a rule
 * `{segment_key}` stands for as many rules as its segment has conditions
 * (`segmentSize`), in order, as `expandFlag` writes them; any other rule for one.
 *
 * @example
 * // rules [{segment_key: 'staff'}, {attribute: 'plan', …}], staff with 2 conditions
 * ruleOrigin(saved, 2, () => 2) // { index: 1 }
 */
export function ruleOrigin(
  saved: { readonly [field: string]: unknown },
  expandedIndex: number,
  segmentSize: (segmentKey: string) => number,
): RuleOrigin | undefined {
  const rules = Array.isArray(saved.rules) ? (saved.rules as unknown[]) : []
  let start = 0
  for (const [index, rule] of rules.entries()) {
    const segmentKey = (rule as { segment_key?: unknown } | null)?.segment_key
    const segment = typeof segmentKey === 'string' ? segmentKey : undefined
    const width = segment === undefined ? 1 : segmentSize(segment)
    if (expandedIndex < start + width) return segment === undefined ? { index } : { index, segment_key: segment }
    start += width
  }
  return undefined
}
