import { DIALECTS } from '@flagsync/test-support/databases'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { pendingDelivery } from '../../src/webhooks/emit.js'
import { WEBHOOK_TABLES } from '../../src/webhooks/index.js'
import { createProject, putFlag } from '../flags/support.js'
import type { Harness, Json } from '../harness.js'
import { createWebhook, eventually, type Receiver, startReceiver, startWebhookHarness } from './support.js'

const SECOND = 1000
const HOUR = 3600 * SECOND
const DAY = 24 * HOUR

describe.each(DIALECTS)('webhook delivery on %s', (dialect) => {
  let h: Harness
  const receivers: Receiver[] = []
  const receiver = async () => {
    const r = await startReceiver(() => h.clock.now)
    receivers.push(r)
    return r
  }
  /** A project with one webhook (every event) at a fresh receiver. */
  const setup = async () => {
    const target = await receiver()
    const project = await createProject(h)
    const hook = await createWebhook(h, project.id, target, ['*'])
    return { target, project, hook }
  }
  const deliveriesOf = async (webhookId: string): Promise<Json[]> =>
    h.server.runtime.knex(WEBHOOK_TABLES.deliveries).where('webhook_id', webhookId).orderBy('created_at')
  const webhookRow = async (id: string): Promise<Json> =>
    h.server.runtime.knex(WEBHOOK_TABLES.webhooks).where('id', id).first()
  /** Waits until the delivery has had `attempts` attempts recorded, and returns its row. */
  const afterAttempts = (webhookId: string, attempts: number) =>
    eventually(async () => {
      const [row] = await deliveriesOf(webhookId)
      expect(Number(row?.attempts)).toBe(attempts)
      return row as Json
    })

  beforeAll(async () => {
    h = await startWebhookHarness(dialect, {
      WEBHOOK_RETRY_BASE_MS: '1000',
      WEBHOOK_DISABLE_AFTER_MS: '600000',
      WEBHOOK_TIMEOUT_MS: '1000',
    })
  })
  afterEach(async () => {
    for (const r of receivers.splice(0)) {
      // Every delivery any test caused, verified as a receiver would.
      expect(r.received.filter((got) => got.verifyError !== null)).toEqual([])
      await r.close()
    }
  })
  afterAll(async () => {
    await h?.dispose()
  })

  it('a failed attempt is retried with the same webhook-id after an exponential backoff with jitter', async () => {
    const { target, project, hook } = await setup()
    target.answer = () => (target.received.length < 3 ? { status: 500, body: 'down' } : { status: 204 })
    await putFlag(h, project.production, { key: 'retried', is_enabled: true })

    const first = await afterAttempts(hook.id, 1)
    expect(first).toMatchObject({ status: 'pending', last_status: 500, last_response: 'down' })
    const firstDelay = Number(first.next_attempt_at) - Number(first.last_attempt_at)
    expect(firstDelay).toBeGreaterThanOrEqual(0.5 * SECOND)
    expect(firstDelay).toBeLessThanOrEqual(SECOND)
    expect((await webhookRow(hook.id)).failing_since).not.toBeNull()
    // Not due yet: nothing more is sent until the clock reaches next_attempt_at.
    await new Promise((r) => setTimeout(r, 150))
    expect(target.received).toHaveLength(1)

    h.clock.advance(firstDelay)
    const second = await afterAttempts(hook.id, 2)
    const secondDelay = Number(second.next_attempt_at) - Number(second.last_attempt_at)
    expect(secondDelay).toBeGreaterThanOrEqual(SECOND)
    expect(secondDelay).toBeLessThanOrEqual(2 * SECOND)

    h.clock.advance(secondDelay)
    const third = await afterAttempts(hook.id, 3)
    expect(third).toMatchObject({ status: 'delivered', last_status: 204 })
    expect(target.received).toHaveLength(3)
    expect(new Set(target.received.map((r) => r.id))).toEqual(new Set([first.id]))
    expect(new Set(target.received.map((r) => r.raw)).size).toBe(1)
    expect(target.received.map((r) => r.verifyError)).toEqual([null, null, null])
    // Each attempt is signed at its own time.
    const stamps = target.received.map((r) => Number(r.timestamp))
    expect(stamps[2]).toBeGreaterThan(stamps[0] as number)
    expect((await webhookRow(hook.id)).failing_since).toBeNull()
  })

  it('Retry-After sets the next attempt', async () => {
    const { target, project, hook } = await setup()
    target.answer = () =>
      target.received.length < 2 ? { status: 503, headers: { 'Retry-After': '120' } } : { status: 200 }
    await putFlag(h, project.production, { key: 'later', is_enabled: true })
    const first = await afterAttempts(hook.id, 1)
    expect(Number(first.next_attempt_at) - Number(first.last_attempt_at)).toBe(120 * SECOND)
    h.clock.advance(119 * SECOND)
    await new Promise((r) => setTimeout(r, 150))
    expect(target.received).toHaveLength(1)
    h.clock.advance(SECOND)
    expect(await afterAttempts(hook.id, 2)).toMatchObject({ status: 'delivered' })
    expect(target.received[1]?.id).toBe(first.id)
  })

  it('Retry-After: 0 or a past date waits a second rather than send again at once', async () => {
    const { target, project, hook } = await setup()
    const past = new Date(h.clock.now - HOUR).toUTCString()
    target.answer = () => ({
      status: 503,
      headers: { 'Retry-After': target.received.length < 2 ? '0' : past },
    })
    await putFlag(h, project.production, { key: 'at-once', is_enabled: true })
    const first = await afterAttempts(hook.id, 1)
    expect(Number(first.next_attempt_at) - Number(first.last_attempt_at)).toBe(SECOND)
    // The clock stands still: a delivery due at once would be sent again and again meanwhile.
    await new Promise((r) => setTimeout(r, 300))
    expect(target.received).toHaveLength(1)
    h.clock.advance(SECOND)
    const second = await afterAttempts(hook.id, 2)
    expect(Number(second.next_attempt_at) - Number(second.last_attempt_at)).toBe(SECOND)
    await h.call(`/api/projects/${project.id}/webhooks/${hook.id}`, { method: 'DELETE', as: h.admin })
  })

  it('a 410 disables the webhook: no more deliveries are queued for it', async () => {
    const { target, project, hook } = await setup()
    target.answer = () => ({ status: 410, body: 'gone' })
    await putFlag(h, project.production, { key: 'gone', is_enabled: true })
    expect(await afterAttempts(hook.id, 1)).toMatchObject({ status: 'failed', last_status: 410 })
    const shown = await h.call(`/api/projects/${project.id}/webhooks/${hook.id}`, { as: h.admin })
    expect(shown.body).toMatchObject({ enabled: false, disabled_reason: expect.stringContaining('410') })
    await putFlag(h, project.production, { key: 'after-gone', is_enabled: true })
    expect(await deliveriesOf(hook.id)).toHaveLength(1)
    const ping = await h.call(`/api/projects/${project.id}/webhooks/${hook.id}/test`, { method: 'POST', as: h.admin })
    expect(ping.status).toBe(409)
  })

  it('a target failing for WEBHOOK_DISABLE_AFTER_MS is disabled and shown as such', async () => {
    const { target, project, hook } = await setup()
    target.answer = () => ({ status: 500 })
    await putFlag(h, project.production, { key: 'failing', is_enabled: true })
    await afterAttempts(hook.id, 1)
    h.clock.advance(10 * 60 * SECOND)
    const last = await afterAttempts(hook.id, 2)
    expect(last).toMatchObject({ status: 'failed', last_status: 500 })
    const list = await h.call(`/api/projects/${project.id}/webhooks`, { as: h.admin })
    expect(list.body[0]).toMatchObject({ enabled: false, disabled_reason: expect.stringContaining('failing since') })
    // Enabled again, it starts afresh.
    const on = await h.call(`/api/projects/${project.id}/webhooks/${hook.id}`, {
      method: 'PATCH',
      as: h.admin,
      body: { enabled: true },
    })
    expect(on.body).toMatchObject({ enabled: true, disabled_reason: null, failing_since: null })
  })

  it('redirects are not followed, answers are kept to 4 KiB, a slow target times out', async () => {
    const { target, project, hook } = await setup()
    const elsewhere = await receiver()
    target.answer = (r) => {
      const key = r.body.data.flag_key
      if (key === 'redirected') return { status: 307, headers: { Location: elsewhere.url } }
      if (key === 'verbose') return { status: 200, body: 'x'.repeat(100_000) }
      return { status: 200, delayMs: 1500 }
    }
    await putFlag(h, project.production, { key: 'redirected', is_enabled: true })
    await putFlag(h, project.production, { key: 'verbose', is_enabled: true })
    await putFlag(h, project.production, { key: 'slow', is_enabled: true })
    const rows = await eventually(async () => {
      const all = await deliveriesOf(hook.id)
      expect(all.every((d) => Number(d.attempts) === 1)).toBe(true)
      return new Map(all.map((d) => [JSON.parse(d.payload).data.flag_key as string, d]))
    }, 15_000)
    expect(rows.get('redirected')).toMatchObject({ status: 'pending', last_status: 307 })
    expect(elsewhere.received).toHaveLength(0)
    expect(rows.get('verbose')).toMatchObject({ status: 'delivered', last_status: 200 })
    expect(rows.get('verbose').last_response).toHaveLength(4096)
    expect(rows.get('slow')).toMatchObject({ status: 'pending', last_status: null })
    expect(rows.get('slow').last_error).toContain('no answer within 1000 ms')
  }, 20_000)

  it('settled deliveries older than WEBHOOK_DELIVERY_RETENTION_DAYS (30) are deleted hourly; pending ones stay', async () => {
    const { hook } = await setup()
    const now = h.clock.now
    const at = (status: 'pending' | 'delivered' | 'failed', createdAt: number) => ({
      ...pendingDelivery(hook.id, 'flag.updated', '{}', createdAt),
      status,
      // A pending one is due far ahead, so the worker leaves it alone meanwhile.
      next_attempt_at: now + 30 * DAY,
    })
    const rows = {
      oldDelivered: at('delivered', now - 31 * DAY),
      oldFailed: at('failed', now - 31 * DAY),
      oldPending: at('pending', now - 31 * DAY),
      recent: at('delivered', now - 29 * DAY),
    }
    await h.server.runtime.knex(WEBHOOK_TABLES.deliveries).insert(Object.values(rows))
    h.clock.advance(HOUR)
    await eventually(async () => {
      const left = (await deliveriesOf(hook.id)).map((d) => d.id).sort()
      expect(left).toEqual([rows.oldPending.id, rows.recent.id].sort())
    })
  })
})
