import type { WeightedVariant } from '@flagsync/protocol'

/** The service's cap on one weight (its validation refuses more), so a total stays inside the hash range. */
const MAX_WEIGHT = 1_000_000

interface VariantShare {
  /** The share of users this variant gets, in percent (0–100), or null when no variant can be served. */
  percent: number | null
  /** What is wrong with this weight, in words; null when it is fine. */
  problem: string | null
}

export interface WeightSummary {
  total: number
  shares: VariantShare[]
  /** Why the split cannot be served as it stands; null when it can. */
  problem: string | null
}

/**
 * The flag service's model: weights are relative, "need not sum to 100 and are normalized
 * against their total". So the editor shows each variant's share of the total
 * as it is typed; only a total of 0 (nobody gets anything) and weights the
 * service refuses (negative, fractional, above MAX_WEIGHT) are problems.
 */
export function summarizeWeights(variants: ReadonlyArray<Pick<WeightedVariant, 'weight'>>): WeightSummary {
  const problems = variants.map((v) => weightProblem(v.weight))
  const valid = problems.every((p) => p === null)
  const total = valid ? variants.reduce((sum, v) => sum + v.weight, 0) : Number.NaN
  const shares = variants.map((v, i) => ({
    percent: valid && total > 0 ? (v.weight / total) * 100 : null,
    problem: problems[i] ?? null,
  }))
  let problem: string | null = null
  if (!valid) problem = 'fix the weights marked below'
  else if (variants.length > 0 && total === 0) problem = 'the weights add up to 0, so no variant can be served'
  return { total: valid ? total : 0, shares, problem }
}

function weightProblem(weight: number): string | null {
  if (!Number.isFinite(weight)) return 'a weight is a whole number'
  if (!Number.isInteger(weight)) return 'a weight is a whole number'
  if (weight < 0) return 'a weight cannot be negative'
  if (weight > MAX_WEIGHT) return `a weight is at most ${MAX_WEIGHT.toLocaleString('en')}`
  return null
}

/** "33.3 %": one decimal below 10 % or for thirds, none for whole numbers. */
export function formatPercent(percent: number): string {
  const rounded = Math.round(percent * 10) / 10
  return `${Number.isInteger(rounded) ? rounded.toFixed(0) : rounded.toFixed(1)} %`
}
