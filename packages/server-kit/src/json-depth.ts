/** The deepest nesting of arrays and objects a JSON body may have. Flags need a handful of levels; 64 leaves room. */
export const MAX_JSON_DEPTH = 64

/**
 * Whether `value` nests arrays and objects deeper than `maxDepth` (a scalar is
 * depth 0, `{}` and `[]` depth 1). Iterative, with an explicit stack, so that
 * checking a value nested a million deep cannot overflow the call stack
 * itself; it stops at the first node past the limit.
 */
export function jsonDepthExceeds(value: unknown, maxDepth: number = MAX_JSON_DEPTH): boolean {
  if (typeof value !== 'object' || value === null) return false
  const nodes: object[] = [value]
  const depths: number[] = [1]
  while (nodes.length > 0) {
    const node = nodes.pop() as object
    const depth = depths.pop() as number
    if (depth > maxDepth) return true
    const children: unknown[] = Array.isArray(node) ? node : Object.values(node)
    for (const child of children) {
      if (typeof child === 'object' && child !== null) {
        nodes.push(child)
        depths.push(depth + 1)
      }
    }
  }
  return false
}
