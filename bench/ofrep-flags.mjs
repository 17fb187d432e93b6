// The OFREP benches' workload: 350 flat flags of mixed kinds, random evaluation contexts from a seeded PRNG,
// and the flat API CLI started with an SDK key and seeded through its own POST /sync.
import { insertBatch } from './lib/flags.mjs'
import { FLAT_API_CLI, startCli } from './lib/proc.mjs'
import { prng } from './lib/random.mjs'

export const OFREP_KEY = 'bench-ofrep-sdk-key'
export const AUTH = { authorization: `Bearer ${OFREP_KEY}` }

const COUNTRIES = ['DE', 'FR', 'NL', 'US', 'GB', 'ES', 'IT', 'PL', 'SE', 'JP']
const PLANS = ['free', 'pro', 'team', 'enterprise']
const OPERATORS = /** @type {const} */ (['equals', 'not_equals', 'contains', 'starts_with', 'ends_with'])

/**
 * Flag `i` of the mix (the flat API's flags are boolean: no variants on this path). By `i % 7`: on with nothing to
 * target (STATIC), off (DISABLED), one rule (TARGETING_MATCH or DEFAULT), two rules on different attributes plus a
 * rollout, a rollout alone (SPLIT), three rules, a rule on an attribute most contexts lack.
 * @param {number} i
 */
export function ofrepFlag(i) {
  const rule = (/** @type {number} */ j) => {
    const attribute = ['country', 'plan', 'email', 'appVersion'][j % 4]
    const operator = OPERATORS[(i + j) % OPERATORS.length]
    const values =
      attribute === 'country'
        ? [COUNTRIES[i % 10], COUNTRIES[(i + 3) % 10]]
        : attribute === 'plan'
          ? [PLANS[i % 4]]
          : attribute === 'email'
            ? ['@example.com', 'qa-']
            : ['2.', '3.1']
    return { attribute, operator, values }
  }
  const kind = i % 7
  const rules =
    kind === 2 ? [rule(i)] : kind === 3 ? [rule(i), rule(i + 1)] : kind === 5 ? [rule(0), rule(1), rule(2)] : []
  if (kind === 6) rules.push({ attribute: 'beta', operator: 'equals', values: ['yes'] })
  return {
    key: `ofrep-${String(i).padStart(4, '0')}`,
    is_enabled: kind !== 1,
    rollout_percentage: kind === 3 || kind === 4 ? (i * 13) % 101 : null,
    description: `OFREP bench flag ${i}`,
    rules,
  }
}

/** `count` request bodies `{context: {...}}` from a seeded PRNG: every run measures the same contexts. */
export function randomContexts(count, seed = 350) {
  const random = prng(seed)
  const pick = (/** @type {readonly string[]} */ list) =>
    /** @type {string} */ (list[Math.floor(random() * list.length)])
  return Array.from({ length: count }, () => {
    const id = Math.floor(random() * 1e9).toString(36)
    /** @type {Record<string, string>} */
    const context = {
      targetingKey: `user-${id}`,
      country: pick(COUNTRIES),
      plan: pick(PLANS),
      email: random() < 0.5 ? `${id}@example.com` : `qa-${id}@corp.test`,
      appVersion: `${1 + Math.floor(random() * 3)}.${Math.floor(random() * 10)}.0`,
    }
    if (random() < 0.1) context.beta = 'yes'
    return JSON.stringify({ context })
  })
}

/**
 * The flat API CLI (SQLite in a temp dir, SDK_KEY set) with `flags` seeded through POST /sync.
 * @param {Array<Record<string, unknown>>} flags
 */
export async function startOfrepServer(flags) {
  const server = await startCli(FLAT_API_CLI, { SDK_KEY: OFREP_KEY })
  const res = await fetch(`${server.url}/sync`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...AUTH },
    body: JSON.stringify(insertBatch(/** @type {any} */ (flags))),
  })
  if (!res.ok) {
    await server.stop()
    throw new Error(`seeding failed: ${res.status} ${await res.text()}`)
  }
  await res.arrayBuffer()
  return server
}
