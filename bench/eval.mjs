// eval.targeted.ops_per_s: evaluate() of a flag with 5 rules, a 50 % rollout and 3 weighted variants, for varying users.
// Baseline: the same decision written by hand for this one flag (no shape checks, no result object), with the package's murmur3.
import { evaluate } from '@flagsync/evaluation'
import { atLeast, benchMain, log, row } from './lib/cli.mjs'
import { median, now } from './lib/stats.mjs'
import { handWritten, TARGETED_FLAG, users } from './lib/workloads.mjs'

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
