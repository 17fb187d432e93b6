import { type HashPair, murmur3Pair } from './murmur3.js'

/** Seed of the rollout hash (Unleash's STRATEGY_SEED). */
export const ROLLOUT_SEED = 0

/**
 * Seed of the variant hash (Unleash's VARIANT_SEED). A seed other than the
 * rollout's keeps the two decisions independent: with one seed and weights
 * totalling 100, everyone inside a 10 % rollout would get the variant that
 * owns the first tenth of the range.
 */
export const VARIANT_SEED = 86028157

/**
 * The bucket of a user for a flag: `murmur3("<flagKey>:<userId>", seed) % size`,
 * an integer in `[0, size)`. A user is inside a rollout of `p` percent when
 * `bucket(flagKey, userId) < p`. Unleash writes the same test as
 * `murmur3(...) % 100 + 1 <= p`; the two are equivalent.
 */
export function bucket(flagKey: string, userId: string, seed = ROLLOUT_SEED, size = 100): number {
  return murmur3Pair(flagKey, userId, seed, seed, scratch).a % size
}

const scratch: HashPair = { a: 0, b: 0 }
