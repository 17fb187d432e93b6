import { randomUUID } from 'node:crypto'
import type { Logger } from '@flagsync/server-kit'
import type { Knex } from 'knex'
import {
  type AttemptOutcome,
  type ClaimedDelivery,
  claimDeliveries,
  pruneDeliveries,
  recordAttempts,
  retryAfterMs,
  retryDelay,
  type SettledAttempt,
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
 * Sends the outbox: up to `concurrency` deliveries in flight. One loop does
 * the database work: it records the attempts that finished since its last
 * turn (`recordAttempts`), then claims as many due
 * deliveries as there are free slots (`claimDeliveries`), and goes round
 * again while attempts finish or deliveries remain; a slot is free once its
 * attempt is recorded. Idle, it looks again every `pollMs` (other instances'
 * events) or when poked (this instance's). Deliveries of one webhook may
 * arrive out of order: each is independent and retried on its own schedule,
 * so receivers order by the body's `timestamp` or the flag's `revision`, not
 * by arrival.
 */
export class DeliveryWorker {
  private readonly owner = randomUUID().slice(0, 8)
  private readonly sending = new Set<Promise<void>>()
  private settled: SettledAttempt[] = []
  private readonly transport: WebhookTransport
  private readonly closeTransport: () => void
  private readonly setTimer: (fn: () => void, ms: number) => unknown
  private readonly clearTimer: (timer: unknown) => void
  private timer: unknown
  private looping: Promise<void> | undefined
  private again = false
  /** The last claim took all it asked for: more are likely due, so the next claim skips its read-only look. */
  private backlog = false
  private stopped = false
  private prunedAt = Number.NEGATIVE_INFINITY
  private pruning: Promise<void> | undefined

  constructor(
    private readonly deps: WorkerDeps,
    private readonly settings: WebhookSettings,
  ) {
    const http = deps.transport ? undefined : httpTransport(settings.concurrency)
    this.transport = deps.transport ?? (http as NonNullable<typeof http>).post
    this.closeTransport = () => http?.close()
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
    this.clearTimer(this.timer)
    this.timer = undefined
    this.wake()
  }

  /** Stops claiming, waits for the attempts in flight to be recorded, and closes the kept-alive connections. */
  async stop(): Promise<void> {
    this.stopped = true
    this.clearTimer(this.timer)
    await this.pruning
    while (this.sending.size > 0 || this.looping || this.settled.length > 0) {
      const busy: Array<Promise<unknown>> = [...this.sending, new Promise((r) => setTimeout(r, 5))]
      if (this.looping) busy.push(this.looping)
      await Promise.race(busy)
      if (!this.looping && this.settled.length > 0) this.wake()
    }
    this.closeTransport()
  }

  /** Runs the loop, or has the running one go round once more. */
  private wake(): void {
    if (this.looping) {
      this.again = true
      return
    }
    this.looping = this.loop().finally(() => {
      this.looping = undefined
      // A wake between the loop's last check and here would otherwise be lost.
      if (this.again) this.wake()
    })
  }

  private async loop(): Promise<void> {
    let claimedAll = false
    do {
      this.again = false
      claimedAll = false
      await this.recordSettled()
      if (this.stopped) continue
      const limit = this.settings.concurrency - this.sending.size - this.settled.length
      if (limit <= 0) continue
      const claimed = await this.claim(limit)
      for (const delivery of claimed) this.start(delivery)
      claimedAll = claimed.length === limit
      this.backlog = claimedAll
      if (claimed.length === 0) this.pruneWhenDue()
    } while (this.again || claimedAll || this.settled.length > 0)
    // While attempts are in flight, the next turn comes when one of them finishes.
    if (this.sending.size === 0) this.idle()
  }

  private idle(): void {
    if (this.stopped || this.timer !== undefined) return
    this.timer = this.setTimer(() => {
      this.timer = undefined
      this.wake()
    }, this.settings.pollMs)
  }

  private async claim(limit: number): Promise<ClaimedDelivery[]> {
    try {
      return await claimDeliveries(this.deps.knex, this.deps.dialect, {
        owner: this.owner,
        now: this.deps.clock(),
        leaseMs: this.settings.timeoutMs * 3,
        limit,
        busy: this.backlog,
      })
    } catch (err) {
      this.deps.logger.warn({ err }, 'webhook deliveries: claiming failed; retrying')
      return []
    }
  }

  private start(delivery: ClaimedDelivery): void {
    const attempt = this.send(delivery).then((outcome) => {
      this.sending.delete(attempt)
      this.settled.push({ delivery, outcome })
      this.wake()
      if (outcome.kind !== 'delivered') this.logFailure(delivery, outcome)
    })
    this.sending.add(attempt)
  }

  private async recordSettled(): Promise<void> {
    const batch = this.settled.splice(0)
    if (batch.length === 0) return
    const random = this.deps.random ?? Math.random
    try {
      await recordAttempts(this.deps.knex, batch, {
        now: this.deps.clock(),
        disableAfterMs: this.settings.disableAfterMs,
        retryDelayMs: (attempts, after) =>
          retryDelay(attempts, after, { baseMs: this.settings.retryBaseMs, maxMs: this.settings.retryMaxMs, random }),
      })
    } catch (err) {
      // The leases run out and the deliveries are claimed again: sent twice, never lost.
      const ids = batch.map((a) => a.delivery.id)
      this.deps.logger.warn({ err, delivery_ids: ids }, 'webhook deliveries: recording attempts failed')
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

  private logFailure(delivery: ClaimedDelivery, outcome: Exclude<AttemptOutcome, { kind: 'delivered' }>): void {
    this.deps.logger.info(
      { webhook_id: delivery.webhook_id, delivery_id: delivery.id, status: outcome.status, outcome: outcome.kind },
      outcome.kind === 'failed' && outcome.error
        ? `webhook delivery failed: ${outcome.error}`
        : 'webhook delivery failed',
    )
  }

  /** One signed POST; the secret goes into the signature only. */
  private async send(delivery: ClaimedDelivery): Promise<AttemptOutcome> {
    try {
      const headers = signedHeaders(delivery.secret, delivery.id, this.deps.clock(), delivery.payload)
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
