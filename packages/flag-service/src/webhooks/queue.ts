import { randomUUID } from 'node:crypto'
import type { Knex } from 'knex'
import { WEBHOOK_TABLES } from './tables.js'

const D = WEBHOOK_TABLES.deliveries
const W = WEBHOOK_TABLES.webhooks

/** Pending deliveries of enabled webhooks, due at `now` and not leased (or their lease ran out). */
const due = (knex: Knex, now: number) =>
  knex({ d: D })
    .join({ w: W }, 'w.id', 'd.webhook_id')
    .where('d.status', 'pending')
    .andWhere('d.next_attempt_at', '<=', now)
    .andWhere((q) => {
      q.whereNull('d.lease_until').orWhere('d.lease_until', '<', now)
    })
    .andWhere('w.enabled', true)

/** A delivery this instance holds the lease of, with what sending it needs. */
export interface ClaimedDelivery {
  id: string
  webhook_id: string
  payload: string
  attempts: number
  url: string
  secret: string
  /** The claim's token: outcomes are recorded only while it still holds the lease. */
  lease_owner: string
}

/**
 * Leases up to `limit` due deliveries of enabled webhooks until `now + leaseMs`.
 * One statement on either dialect: PostgreSQL's subquery locks the rows it
 * picks with `FOR UPDATE SKIP LOCKED`, so instances claiming at once take
 * disjoint rows (a row another instance leased meanwhile fails the lease
 * condition when re-checked under the lock); SQLite's single writer runs one
 * claim at a time. A killed instance's lease expires and the rows are claimed
 * again (at-least-once: they may then be sent twice).
 */
export async function claimDeliveries(
  knex: Knex,
  dialect: 'sqlite' | 'postgres',
  claim: { owner: string; now: number; leaseMs: number; limit: number; busy?: boolean },
): Promise<ClaimedDelivery[]> {
  if (claim.limit <= 0) return []
  const token = `${claim.owner}:${randomUUID()}`
  // A read first, unless the last claim found more than it could take: an idle poll takes no write lock (SQLite's
  // UPDATE would, even when it matches nothing).
  if (!claim.busy && !(await due(knex, claim.now).first('d.id'))) return []
  const pick = due(knex, claim.now).select('d.id').orderBy('d.next_attempt_at').limit(claim.limit)
  if (dialect === 'postgres') pick.forUpdate('d').skipLocked()
  // The webhook's URL and secret come back with each row, read as the lease is taken.
  const ofWebhook = (column: 'url' | 'secret') =>
    knex.raw('(select ?? from ?? where ??.?? = ??.??) as ??', [column, W, W, 'id', D, 'webhook_id', column])
  const leased = (await knex(D)
    .whereIn('id', pick)
    .update({ lease_owner: token, lease_until: claim.now + claim.leaseMs })
    .returning(['id', 'webhook_id', 'payload', 'attempts', ofWebhook('url'), ofWebhook('secret')])) as Array<
    Omit<ClaimedDelivery, 'attempts' | 'lease_owner'> & { attempts: number | string }
  >
  return leased.map((d) => ({ ...d, attempts: Number(d.attempts), lease_owner: token }))
}

/** How one attempt ended. */
export type AttemptOutcome =
  | { kind: 'delivered'; status: number; body: string }
  /** The target answered 410 Gone: it asks for no more deliveries, so the webhook is disabled. */
  | { kind: 'gone'; status: number; body: string }
  /** Any other answer, or none (`status` null); `retryAfterMs` from the answer's Retry-After. */
  | { kind: 'failed'; status: number | null; body: string | null; error: string | null; retryAfterMs: number | null }

export interface RecordPolicy {
  now: number
  disableAfterMs: number
  /** The delay before the next attempt, given the attempts made so far (this one included). */
  retryDelayMs: (attempts: number, retryAfterMs: number | null) => number
}

/** One finished attempt, waiting to be recorded. */
export interface SettledAttempt {
  delivery: ClaimedDelivery
  outcome: AttemptOutcome
}

/**
 * Records attempts in the order they finished: each on its delivery (only
 * while its claim still holds it) and on its webhook. A 2xx clears the
 * webhook's failing streak; a failure starts one or, once it has lasted
 * `disableAfterMs`, disables the webhook (the delivery is then `failed`);
 * otherwise the delivery is due again after the retry delay, with the same
 * id. Consecutive 2xx attempts are written together, a statement per answer
 * rather than per delivery. With a failure among them, everything is one
 * transaction; 2xx attempts alone need none (see `recordDelivered`).
 */
export async function recordAttempts(
  knex: Knex,
  attempts: readonly SettledAttempt[],
  policy: RecordPolicy,
): Promise<void> {
  if (attempts.length === 0) return
  if (attempts.every((a) => a.outcome.kind === 'delivered')) return recordDelivered(knex, attempts, policy.now)
  await knex.transaction(async (trx) => {
    let run: SettledAttempt[] = []
    for (const attempt of attempts) {
      if (attempt.outcome.kind === 'delivered') {
        run.push(attempt)
        continue
      }
      await recordDelivered(trx, run, policy.now)
      run = []
      await recordFailed(trx, attempt.delivery, attempt.outcome, policy)
    }
    await recordDelivered(trx, run, policy.now)
  })
}

/** Columns every recorded attempt sets; `attempts + 1` is this claim's attempt (the lease excludes any other). */
const attemptColumns = (trx: Knex, outcome: AttemptOutcome, now: number) => ({
  attempts: trx.raw('?? + 1', ['attempts']),
  last_status: outcome.status,
  last_response: outcome.body,
  last_error: outcome.kind === 'failed' ? outcome.error : null,
  last_attempt_at: now,
  lease_owner: null,
  lease_until: null,
})

/**
 * 2xx attempts: their webhooks' failing streaks end, then one update per
 * claim and answer. Each statement stands on its own: the 2xx answers end the
 * streaks whether or not the deliveries' rows are written after them (a crash
 * in between leaves those leased, to be sent again when the lease runs out).
 */
async function recordDelivered(knex: Knex, run: readonly SettledAttempt[], now: number): Promise<void> {
  if (run.length === 0) return
  const hooks = [...new Set(run.map((a) => a.delivery.webhook_id))]
  await knex(W).whereIn('id', hooks).whereNotNull('failing_since').update({ failing_since: null })
  const groups = new Map<string, { sample: AttemptOutcome; owner: string; ids: string[] }>()
  for (const { delivery, outcome } of run) {
    const key = JSON.stringify([delivery.lease_owner, outcome.status, outcome.body])
    const group = groups.get(key) ?? { sample: outcome, owner: delivery.lease_owner, ids: [] }
    group.ids.push(delivery.id)
    groups.set(key, group)
  }
  for (const { sample, owner, ids } of groups.values()) {
    await knex(D)
      .where('lease_owner', owner)
      .whereIn('id', ids)
      .update({ ...attemptColumns(knex, sample, now), status: 'delivered', delivered_at: now })
  }
}

/** A non-2xx answer or none: the webhook's streak starts or goes on; the delivery is retried, or failed with it. */
async function recordFailed(
  trx: Knex,
  delivery: ClaimedDelivery,
  outcome: Exclude<AttemptOutcome, { kind: 'delivered' }>,
  policy: RecordPolicy,
): Promise<void> {
  const { now } = policy
  const common = attemptColumns(trx, outcome, now)
  const mine = () => trx(D).where({ id: delivery.id, lease_owner: delivery.lease_owner })
  if (outcome.kind === 'gone') {
    await mine().update({ ...common, status: 'failed' })
    await disable(trx, delivery.webhook_id, `the target answered ${outcome.status} Gone`, now)
    return
  }
  await trx(W).where('id', delivery.webhook_id).whereNull('failing_since').update({ failing_since: now })
  const hook = (await trx(W).where('id', delivery.webhook_id).first('failing_since')) as
    | { failing_since: number | string | null }
    | undefined
  const since = Number(hook?.failing_since ?? now)
  if (now - since >= policy.disableAfterMs) {
    await mine().update({ ...common, status: 'failed' })
    const reason = `failing since ${new Date(since).toISOString()} (${outcome.error ?? `HTTP ${outcome.status}`})`
    await disable(trx, delivery.webhook_id, reason, now)
    return
  }
  const next = now + policy.retryDelayMs(delivery.attempts + 1, outcome.retryAfterMs)
  await mine().update({ ...common, status: 'pending', next_attempt_at: next })
}

async function disable(trx: Knex, webhookId: string, reason: string, now: number): Promise<void> {
  await trx(W)
    .where('id', webhookId)
    .update({ enabled: false, disabled_reason: reason, failing_since: null, updated_at: now })
}

/**
 * Retry-After in ms: delay-seconds or an HTTP date (relative to `now`);
 * null when absent or unreadable.
 */
export function retryAfterMs(header: string | null, now: number): number | null {
  if (header === null || header.trim() === '') return null
  const trimmed = header.trim()
  if (/^\d+$/.test(trimmed)) return Number(trimmed) * 1000
  const date = Date.parse(trimmed)
  return Number.isNaN(date) ? null : Math.max(0, date - now)
}

/** The shortest wait a Retry-After sets: `0` or a past date would otherwise send again at once, in a loop. */
const MIN_RETRY_AFTER_MS = 1000

/**
 * Exponential backoff with jitter: `baseMs · 2^(attempts-1)`, capped at
 * `maxMs`, scaled by a random factor in [0.5, 1) so failing deliveries of
 * many webhooks do not retry in step. A Retry-After replaces it (at least
 * `MIN_RETRY_AFTER_MS`, capped at `maxMs` too).
 */
export function retryDelay(
  attempts: number,
  retryAfter: number | null,
  options: { baseMs: number; maxMs: number; random: () => number },
): number {
  if (retryAfter !== null) return Math.min(Math.max(retryAfter, MIN_RETRY_AFTER_MS), options.maxMs)
  const exponential = Math.min(options.maxMs, options.baseMs * 2 ** Math.min(30, Math.max(0, attempts - 1)))
  return Math.max(1, Math.round(exponential * (0.5 + options.random() * 0.5)))
}

/**
 * Deletes settled deliveries (delivered or failed) created before `before`,
 * `chunk` rows per statement so no delete holds the write lock for long;
 * pending ones stay whatever their age. Returns how many it deleted.
 */
export async function pruneDeliveries(knex: Knex, before: number, chunk = 1000): Promise<number> {
  let total = 0
  for (;;) {
    const settled = knex(D)
      .whereIn('status', ['delivered', 'failed'])
      .andWhere('created_at', '<', before)
      .select('id')
      .limit(chunk)
    const deleted = await knex(D).whereIn('id', settled).delete()
    total += deleted
    if (deleted < chunk) return total
  }
}
