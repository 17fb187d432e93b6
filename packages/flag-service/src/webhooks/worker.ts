import { randomUUID } from 'node:crypto'
import type { Logger } from '@flagsync/server-kit'
import type { Knex } from 'knex'
import {
  type AttemptOutcome,
  type ClaimedDelivery,
  claimDeliveries,
  pruneDeliveries,
  recordAttempt,
  retryAfterMs,
  retryDelay,
} from './queue.js'
import type { WebhookSettings } from './settings.js'
import { signedHeaders } from './signer.js'
import { httpTransport, type WebhookTransport } from './transport.js'

export interface WorkerDeps {
  knex: Knex
  dialect: 'sqlite' | 'postgres'
  logger: Logger
  /** Epoch ms: due times, leases, the signature's timestamp. */
  clock: () => number
  transport?: WebhookTransport
  setTimer?: (fn: () => void, ms: number) => unknown
  clearTimer?: (timer: unknown) => void
  random?: () => number
}

/** How often an idle worker deletes deliveries older than the retention. */
const PRUNE_INTERVAL_MS = 60 * 60 * 1000

// PostgreSQL text cannot hold NUL; a target's answer is kept for reading, not byte-exact.
const loggable = (text: string) => text.replaceAll('\u0000', '')

/**
 * Sends the outbox: claims due deliveries (`claimDeliveries`), up to
 * `concurrency` in flight, and records each attempt. Idle, it looks again
 * every `pollMs` (other instances' events) or when poked (this instance's).
 * Deliveries of one webhook may arrive out of order: each is independent and
 * retried on its own schedule, so receivers order by the body's `timestamp`
 * or the flag's `revision`, not by arrival.
 */
export class DeliveryWorker {
  private readonly owner = randomUUID().slice(0, 8)
  private readonly inFlight = new Set<Promise<void>>()
  private readonly transport: WebhookTransport
  private readonly setTimer: (fn: () => void, ms: number) => unknown
  private readonly clearTimer: (timer: unknown) => void
  private timer: unknown
  private claiming = false
  private again = false
  private stopped = false
  private prunedAt = Number.NEGATIVE_INFINITY
  private pruning: Promise<void> | undefined

  constructor(
    private readonly deps: WorkerDeps,
    private readonly settings: WebhookSettings,
  ) {
    this.transport = deps.transport ?? httpTransport
    this.setTimer =
      deps.setTimer ??
      ((fn, ms) => {
        const t = setTimeout(fn, ms)
        t.unref()
        return t
      })
    this.clearTimer = deps.clearTimer ?? ((t) => clearTimeout(t as NodeJS.Timeout))
  }

  /** Looks for due deliveries now (after a commit that wrote some). */
  poke(): void {
    if (this.stopped) return
    if (this.claiming) {
      this.again = true
      return
    }
    this.clearTimer(this.timer)
    this.timer = undefined
    void this.claimMore()
  }

  /** Stops claiming and waits for the attempts in flight to be recorded. */
  async stop(): Promise<void> {
    this.stopped = true
    this.clearTimer(this.timer)
    await this.pruning
    while (this.inFlight.size > 0 || this.claiming) {
      await Promise.race([...this.inFlight, new Promise((r) => setTimeout(r, 5))])
    }
  }

  private idle(): void {
    if (this.stopped || this.timer !== undefined) return
    this.timer = this.setTimer(() => {
      this.timer = undefined
      void this.claimMore()
    }, this.settings.pollMs)
  }

  private async claimMore(): Promise<void> {
    if (this.stopped || this.claiming) return
    const limit = this.settings.concurrency - this.inFlight.size
    if (limit <= 0) return
    this.claiming = true
    this.again = false
    let claimed: ClaimedDelivery[] = []
    try {
      claimed = await claimDeliveries(this.deps.knex, this.deps.dialect, {
        owner: this.owner,
        now: this.deps.clock(),
        leaseMs: this.settings.timeoutMs * 3,
        limit,
      })
    } catch (err) {
      this.deps.logger.warn({ err }, 'webhook deliveries: claiming failed; retrying')
    } finally {
      this.claiming = false
    }
    for (const delivery of claimed) {
      const attempt = this.attempt(delivery).finally(() => {
        this.inFlight.delete(attempt)
        if (!this.stopped) void this.claimMore()
      })
      this.inFlight.add(attempt)
    }
    if (this.stopped) return
    if (this.again || claimed.length === limit) void this.claimMore()
    else {
      if (claimed.length === 0) this.pruneWhenDue()
      this.idle()
    }
  }

  /** At most hourly, while idle: the delivery log keeps `deliveryRetentionMs` of settled deliveries. */
  private pruneWhenDue(): void {
    const now = this.deps.clock()
    if (this.settings.deliveryRetentionMs <= 0 || this.pruning || now - this.prunedAt < PRUNE_INTERVAL_MS) return
    this.prunedAt = now
    this.pruning = pruneDeliveries(this.deps.knex, now - this.settings.deliveryRetentionMs)
      .then(
        (n) => {
          if (n > 0) this.deps.logger.info(`webhook deliveries: deleted ${n} older than the retention`)
        },
        (err: unknown) => this.deps.logger.warn({ err }, 'webhook deliveries: pruning failed; retrying in an hour'),
      )
      .finally(() => {
        this.pruning = undefined
      })
  }

  private async attempt(delivery: ClaimedDelivery): Promise<void> {
    const outcome = await this.send(delivery)
    const now = this.deps.clock()
    const random = this.deps.random ?? Math.random
    try {
      await recordAttempt(this.deps.knex, delivery, outcome, {
        now,
        disableAfterMs: this.settings.disableAfterMs,
        retryDelayMs: (attempts, after) =>
          retryDelay(attempts, after, { baseMs: this.settings.retryBaseMs, maxMs: this.settings.retryMaxMs, random }),
      })
    } catch (err) {
      // The lease runs out and the delivery is claimed again: sent twice, never lost.
      this.deps.logger.warn({ err, delivery_id: delivery.id }, 'webhook deliveries: recording an attempt failed')
    }
    if (outcome.kind !== 'delivered') {
      this.deps.logger.info(
        { webhook_id: delivery.webhook_id, delivery_id: delivery.id, status: outcome.status, outcome: outcome.kind },
        outcome.kind === 'failed' && outcome.error
          ? `webhook delivery failed: ${outcome.error}`
          : 'webhook delivery failed',
      )
    }
  }

  /** One signed POST; the secret goes into the signature only. */
  private async send(delivery: ClaimedDelivery): Promise<AttemptOutcome> {
    const headers = signedHeaders(delivery.secret, delivery.id, this.deps.clock(), delivery.payload)
    try {
      const res = await this.transport(delivery.url, headers, delivery.payload, {
        timeoutMs: this.settings.timeoutMs,
        allowPrivateTargets: this.settings.allowPrivateTargets,
        maxResponseBytes: this.settings.maxResponseBytes,
      })
      const body = loggable(res.body)
      if (res.status >= 200 && res.status < 300) return { kind: 'delivered', status: res.status, body }
      if (res.status === 410) return { kind: 'gone', status: res.status, body }
      const after = retryAfterMs(res.retryAfter, this.deps.clock())
      return { kind: 'failed', status: res.status, body, error: null, retryAfterMs: after }
    } catch (error) {
      const message = loggable(error instanceof Error ? error.message : String(error)).slice(0, 1000)
      return { kind: 'failed', status: null, body: null, error: message, retryAfterMs: null }
    }
  }
}
