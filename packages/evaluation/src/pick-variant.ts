/**
 * The weight a variant takes part in the split with: its `weight` when that is
 * a positive finite number, else 0 (a weight-0 variant is switched off; an
 * unreadable one is treated the same rather than failing the whole flag).
 */
export function weightOf(variant: unknown): number {
  if (typeof variant !== 'object' || variant === null) return 0
  const weight = (variant as { weight?: unknown }).weight
  return typeof weight === 'number' && weight > 0 && weight < Number.POSITIVE_INFINITY ? weight : 0
}

/** The sum the weights are normalized by; 0 means there is no split. */
export function totalWeight(variants: readonly unknown[]): number {
  let total = 0
  for (let i = 0; i < variants.length; i++) total += weightOf(variants[i])
  return total
}

/**
 * The index of the variant that owns `target`, a point in `[0, totalWeight)`:
 * the first variant whose cumulative weight exceeds it. A weight-0 variant
 * adds nothing to the sum and so can never be the first to exceed it.
 */
export function pickVariant(variants: readonly unknown[], target: number): number {
  let cumulative = 0
  for (let i = 0; i < variants.length; i++) {
    cumulative += weightOf(variants[i])
    if (target < cumulative) return i
  }
  // Unreachable: the loop adds the same weights in the same order as totalWeight, and target < total.
  return variants.length - 1
}
