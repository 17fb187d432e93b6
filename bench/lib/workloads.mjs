// Workloads shared by the Node benchmarks and the Chromium page (bundled for it by browser.mjs with esbuild): the
// compaction queue and its bare baseline, the targeted flag, its users and its hand-coded decision.
import { murmur3, VARIANT_SEED } from '@flagsync/evaluation'
import { prng } from './random.mjs'

export const COLLECTIONS = ['flags', 'notes', 'tasks']
export const RECORDS_PER_COLLECTION = 50_000
const FIELDS = ['is_enabled', 'title', 'done', 'rank', 'color', 'owner', 'tag', 'due']

/**
 * `n` operations over 50 000 records in each of 3 collections: 20 % inserts,
 * 65 % updates of one or two fields, 15 % deletes.
 * @param {number} n
 */
export function randomOperations(n, seed = 42) {
  const random = prng(seed)
  /** @type {import('@flagsync/protocol').Operation[]} */
  const ops = new Array(n)
  for (let i = 0; i < n; i++) {
    const collection = COLLECTIONS[Math.floor(random() * COLLECTIONS.length)]
    const recordId = `r${Math.floor(random() * RECORDS_PER_COLLECTION)}`
    const kind = random()
    if (kind < 0.2) {
      ops[i] = { action: 'insert', collection, recordId, record: { title: `t${i}`, done: false, rank: i } }
    } else if (kind < 0.85) {
      /** @type {Record<string, unknown>} */
      const changes = { [FIELDS[i % FIELDS.length]]: i }
      if (random() < 0.3) changes[FIELDS[(i + 3) % FIELDS.length]] = random() < 0.5
      ops[i] = { action: 'update', collection, recordId, changes }
    } else {
      ops[i] = { action: 'delete', collection, recordId }
    }
  }
  return ops
}

/** @param {readonly import('@flagsync/protocol').Operation[]} ops */
export function lastPerRecord(ops) {
  /** @type {Map<string, Map<string, import('@flagsync/protocol').Operation>>} */
  const byCollection = new Map()
  for (const op of ops) {
    let records = byCollection.get(op.collection)
    if (records === undefined) {
      records = new Map()
      byCollection.set(op.collection, records)
    }
    records.set(op.recordId, op)
  }
  const out = []
  for (const records of byCollection.values()) for (const op of records.values()) out.push(op)
  return out
}

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
export function handWritten(ctx) {
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
