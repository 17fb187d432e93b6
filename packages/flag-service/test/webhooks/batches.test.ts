import { DIALECTS } from '@flagsync/test-support/databases'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { pendingDelivery } from '../../src/webhooks/emit.js'
import { WEBHOOK_TABLES } from '../../src/webhooks/index.js'
import { type AttemptOutcome, claimDeliveries, recordAttempts } from '../../src/webhooks/queue.js'
import { createProject } from '../flags/support.js'
import type { Harness, Json } from '../harness.js'
import { createWebhook, eventually, type Receiver, startReceiver, startWebhookHarness } from './support.js'

const MINUTE = 60_000
const D = WEBHOOK_TABLES.deliveries
const W = WEBHOOK_TABLES.webhooks

describe.each(DIALECTS)('a burst of webhook deliveries on %s', (dialect) => {
  let h: Harness
  let receiver: Receiver
  beforeAll(async () => {
    h = await startWebhookHarness(dialect)
    receiver = await startReceiver(() => h.clock.now)
  })
  afterAll(async () => {
    await h?.dispose()
    await receiver?.close()
  })

  it('shares kept-alive connections, is claimed and recorded in batches, and its connections close with the service', async () => {
    const project = await createProject(h)
    const hook = await createWebhook(h, project.id, receiver, ['*'])
    // Answers take a little while, so attempts finish while others are being recorded.
    receiver.answer = () => ({ status: 204, delayMs: 10 })
    const knex = h.server.runtime.knex
    let updates = 0
    knex.on('query', (q: { sql: string }) => {
      if (/^update\s+\S*flagsync_webhook_deliveries/i.test(q.sql)) updates++
    })
    const N = 80
    const rows = Array.from({ length: N }, (_, i) =>
      pendingDelivery(hook.id, 'flag.updated', `{"n":${i}}`, h.clock.now),
    )
    await knex(D).insert(rows)
    await eventually(async () => {
      const left = await knex(D).where({ webhook_id: hook.id }).whereNot('status', 'delivered').count({ n: '*' })
      expect(Number(left[0]?.n)).toBe(0)
    }, 20_000)
    const delivered = (await knex(D).where({ webhook_id: hook.id })) as Json[]
    expect(delivered.every((d) => Number(d.attempts) === 1 && d.lease_owner === null)).toBe(true)
    expect(new Set(receiver.received.map((r) => r.id))).toEqual(new Set(rows.map((r) => r.id)))
    expect(receiver.received.filter((r) => r.verifyError !== null)).toEqual([])
    // At most WEBHOOK_CONCURRENCY (16) connections, not one per delivery.
    expect(receiver.connections.accepted).toBeLessThanOrEqual(16)
    // A claim and a record per turn, several deliveries each: fewer updates than deliveries.
    expect(updates).toBeLessThan(N)
    expect(receiver.connections.open).toBeGreaterThan(0)
    await h.stop()
    // Well before the 4 s idle timeout: stopping the service closes its connections.
    await eventually(() => expect(receiver.connections.open).toBe(0), 1000)
  }, 30_000)
})

const delivered = (status: number, body: string): AttemptOutcome => ({ kind: 'delivered', status, body })
const failed = (status: number): AttemptOutcome => ({
  kind: 'failed',
  status,
  body: '',
  error: null,
  retryAfterMs: null,
})

describe.each(DIALECTS)('recording the attempts of one turn on %s', (dialect) => {
  let h: Harness
  beforeAll(async () => {
    h = await startWebhookHarness(dialect)
  })
  afterAll(async () => {
    await h?.dispose()
  })

  /** A webhook failing for 11 minutes and `n` deliveries leased to this test (due tomorrow: the worker leaves them). */
  const leased = async (n: number) => {
    const knex = h.server.runtime.knex
    const receiver = await startReceiver()
    await receiver.close()
    const project = await createProject(h)
    const hook = await createWebhook(h, project.id, receiver, ['*'])
    const now = h.clock.now
    await knex(W)
      .where('id', hook.id)
      .update({ failing_since: now - 11 * MINUTE })
    const later = now + 24 * 60 * MINUTE
    const rows = Array.from({ length: n }, () => ({
      ...pendingDelivery(hook.id, 'flag.updated', '{}', now),
      next_attempt_at: later,
    }))
    await knex(D).insert(rows)
    const claimed = await claimDeliveries(knex, dialect, { owner: 'test', now: later, leaseMs: MINUTE, limit: 100 })
    const mine = rows.map((r) => claimed.find((c) => c.id === r.id))
    if (mine.some((c) => c === undefined)) throw new Error('not all claimed')
    return { hook, deliveries: mine as NonNullable<(typeof mine)[number]>[], now }
  }
  const policy = (now: number) => ({ now, disableAfterMs: 10 * MINUTE, retryDelayMs: () => 1000 })
  const row = (id: string): Promise<Json> => h.server.runtime.knex(D).where('id', id).first()
  const hookRow = (id: string): Promise<Json> => h.server.runtime.knex(W).where('id', id).first()

  it('a 2xx that finished before a failure ends the streak first: the webhook stays enabled', async () => {
    const { hook, deliveries, now } = await leased(3)
    const [a, b, c] = deliveries as [(typeof deliveries)[0], (typeof deliveries)[0], (typeof deliveries)[0]]
    await recordAttempts(
      h.server.runtime.knex,
      [
        { delivery: a, outcome: delivered(200, 'ok') },
        { delivery: b, outcome: delivered(204, '') },
        { delivery: c, outcome: failed(500) },
      ],
      policy(now),
    )
    const shown = await hookRow(hook.id)
    expect(shown).toMatchObject({ disabled_reason: null })
    expect(Boolean(shown.enabled)).toBe(true)
    expect(Number(shown.failing_since)).toBe(now)
    expect(await row(a.id)).toMatchObject({
      status: 'delivered',
      last_status: 200,
      last_response: 'ok',
      lease_owner: null,
    })
    expect(await row(b.id)).toMatchObject({ status: 'delivered', last_status: 204, last_response: '' })
    expect(Number((await row(a.id)).attempts)).toBe(1)
    expect(await row(c.id)).toMatchObject({ status: 'pending', last_status: 500, lease_owner: null })
    expect(Number((await row(c.id)).next_attempt_at)).toBe(now + 1000)
  })

  it('a failure that finished before a 2xx continues the streak: it disables the webhook, the 2xx is still recorded', async () => {
    const { hook, deliveries, now } = await leased(2)
    const [a, b] = deliveries as [(typeof deliveries)[0], (typeof deliveries)[0]]
    await recordAttempts(
      h.server.runtime.knex,
      [
        { delivery: a, outcome: failed(503) },
        { delivery: b, outcome: delivered(200, 'ok') },
      ],
      policy(now),
    )
    const shown = await hookRow(hook.id)
    expect(Boolean(shown.enabled)).toBe(false)
    expect(shown.disabled_reason).toContain('failing since')
    expect(await row(a.id)).toMatchObject({ status: 'failed', last_status: 503 })
    expect(await row(b.id)).toMatchObject({ status: 'delivered', last_status: 200 })
  })

  it('leaves a delivery alone once another claim holds its lease', async () => {
    const { deliveries, now } = await leased(2)
    const [a, b] = deliveries as [(typeof deliveries)[0], (typeof deliveries)[0]]
    await h.server.runtime.knex(D).where('id', b.id).update({ lease_owner: 'someone-else' })
    await recordAttempts(
      h.server.runtime.knex,
      [
        { delivery: a, outcome: delivered(200, 'ok') },
        { delivery: b, outcome: delivered(200, 'ok') },
      ],
      policy(now),
    )
    expect(await row(a.id)).toMatchObject({ status: 'delivered' })
    expect(await row(b.id)).toMatchObject({ status: 'pending', lease_owner: 'someone-else', last_status: null })
    expect(Number((await row(b.id)).attempts)).toBe(0)
  })
})
