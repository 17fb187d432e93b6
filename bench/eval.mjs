// eval.targeted.ops_per_s: evaluate() of a flag with 5 rules, a 50 % rollout and 3 weighted variants, for varying users.
// Baseline: the same decision written by hand for this one flag (no shape checks, no result object), with the package's murmur3.
import { evaluate, murmur3, VARIANT_SEED } from '@flagsync/evaluation'
import { atLeast, benchMain, log, row } from './lib/cli.mjs'
import { prng } from './lib/random.mjs'
import { median, now } from './lib/stats.mjs'

export const TARGETED_FLAG = {
  key: 'checkout-redesign',
  is_enabled: true,
  flag_type: 'string',
  default_value: 'control',
  disabled_value: 'off',
  rollout_percentage: 50,
  rules: [
    { attribute: 'email', operator: 'ends_with', values: ['@flagsync.dev', '@example.org'], variant: 'staff' },
    { attribute: 'country', operator: 'equals', values: ['IS', 'NZ', 'UY'], variant: 'pilot' },
    { attribute: 'plan', operator: 'equals', values: ['enterprise'], variant: 'enterprise' },
    { attribute: 'age', operator: 'greater_than_or_equal', values: ['95'], variant: 'senior' },
    { attribute: 'user_id', operator: 'starts_with', values: ['beta-'], variant: 'beta' },
  ],
  variants: [
    { weight: 50, value: 'control' },
    { weight: 30, value: 'treatment-a' },
    { weight: 20, value: 'treatment-b' },
  ],
}

const COUNTRIES = ['DE', 'FR', 'US', 'BR', 'JP', 'IN', 'IS', 'NG', 'CA', 'ES']
const PLANS = ['free', 'pro', 'team', 'enterprise']

/** 65 536 users; about one in five matches a rule. @param {number} count */
export function users(count = 65_536) {
  const random = prng(7)
  return Array.from({ length: count }, (_, i) => ({
    user_id: `${random() < 0.01 ? 'beta-' : 'user-'}${i.toString(36)}-${Math.floor(random() * 1e6)}`,
    email: `u${i}@${random() < 0.02 ? 'flagsync.dev' : 'mail.test'}`,
    country: COUNTRIES[Math.floor(random() * COUNTRIES.length)],
    plan: PLANS[Math.floor(random() ** 3 * PLANS.length)],
    age: 18 + Math.floor(random() * 80),
  }))
}

/** The flag's decision by hand: what a one-off, unchecked implementation costs. @param {any} ctx */
function handWritten(ctx) {
  const email = ctx.email
  if (typeof email === 'string' && (email.endsWith('@flagsync.dev') || email.endsWith('@example.org'))) return 'staff'
  const c = ctx.country
  if (c === 'IS' || c === 'NZ' || c === 'UY') return 'pilot'
  if (ctx.plan === 'enterprise') return 'enterprise'
  if (typeof ctx.age === 'number' && ctx.age >= 95) return 'senior'
  const id = String(ctx.user_id)
  if (id.startsWith('beta-')) return 'beta'
  const hashInput = `checkout-redesign:${id}`
  if (murmur3(hashInput) % 100 >= 50) return 'off'
  const target = murmur3(hashInput, VARIANT_SEED) % 100
  return target < 50 ? 'control' : target < 80 ? 'treatment-a' : 'treatment-b'
}

/**
 * Evaluations per second of `fn` over the users, for about `ms` milliseconds.
 * @param {(ctx: any) => unknown} fn
 * @param {any[]} contexts
 */
function rate(fn, contexts, ms) {
  const mask = contexts.length - 1
  let done = 0
  let sink = 0
  const t0 = now()
  let elapsed = 0
  while (elapsed < ms) {
    for (let i = 0; i < 16_384; i++) {
      const r = fn(contexts[(done + i) & mask])
      if (r !== undefined) sink++
    }
    done += 16_384
    elapsed = now() - t0
  }
  if (sink !== done) throw new Error('an evaluation returned nothing')
  return done / (elapsed / 1000)
}

/** @param {{ quick: boolean }} options */
export async function run({ quick }) {
  const contexts = users()
  const ours = (/** @type {any} */ ctx) => evaluate(TARGETED_FLAG, ctx).value
  // Same answers, so both do the same work.
  for (const ctx of contexts.slice(0, 5000)) {
    const a = ours(ctx)
    const b = handWritten(ctx)
    if (a !== b) throw new Error(`evaluate and the baseline disagree for ${JSON.stringify(ctx)}: ${a} vs ${b}`)
  }
  const ms = quick ? 300 : 1000
  rate(ours, contexts, 300) // warm up both
  rate(handWritten, contexts, 300)
  const oursRuns = []
  const baseRuns = []
  for (let i = 0; i < 3; i++) {
    oursRuns.push(rate(ours, contexts, ms))
    baseRuns.push(rate(handWritten, contexts, ms))
  }
  const value = median(oursRuns)
  const baseline = median(baseRuns)
  const reasons = new Map()
  for (const ctx of contexts) {
    const r = evaluate(TARGETED_FLAG, ctx)
    reasons.set(r.reason, (reasons.get(r.reason) ?? 0) + 1)
  }
  log(`eval: ${Math.round(value)} evals/s, baseline ${Math.round(baseline)}; reasons ${JSON.stringify([...reasons])}`)
  return [
    row({
      id: 'eval.targeted.ops_per_s',
      value,
      unit: 'evals/s',
      baseline,
      ratio: value / baseline,
      goal: atLeast(2_000_000),
      note: `65 536 users cycled; reasons ${[...reasons].map(([k, v]) => `${k} ${Math.round((v / contexts.length) * 100)}%`).join(', ')}; baseline = the same flag hand-coded with murmur3`,
    }),
  ]
}

benchMain(import.meta.url, run)
