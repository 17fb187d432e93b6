import { randomUUID } from 'node:crypto'
import { DIALECTS } from '@flagsync/test-support/databases'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { openServiceRuntime } from '../../src/index.js'
import { WEBHOOK_TABLES } from '../../src/webhooks/index.js'
import { createProject, flagsOf, member, type Project, putFlag, setRequireApproval } from '../flags/support.js'
import type { Harness } from '../harness.js'
import { createWebhook, eventually, type Receiver, startReceiver, startWebhookHarness } from './support.js'

describe.each(DIALECTS)('webhook events on %s', (dialect) => {
  let h: Harness
  let p: Project
  let receiver: Receiver
  let hook: { id: string }
  const typesFrom = (from: number) => receiver.received.slice(from).map((r) => r.body.type as string)

  beforeAll(async () => {
    h = await startWebhookHarness(dialect)
    p = await createProject(h)
    receiver = await startReceiver()
    hook = await createWebhook(h, p.id, receiver, ['*'])
  })
  afterAll(async () => {
    await h?.dispose()
    // Every delivery the suite caused, verified as a receiver would.
    expect(receiver?.received.filter((got) => got.verifyError !== null)).toEqual([])
    await receiver?.close()
  })

  it('segment writes emit segment.updated; /sync writes emit flag events as REST ones do', async () => {
    const from = receiver.received.length
    const segments = `/api/projects/${p.id}/segments`
    const rules = [{ attribute: 'plan', operator: 'equals', values: ['pro'] }]
    expect(
      (await h.call(segments, { method: 'POST', as: h.admin, body: { key: 'pro', name: 'Pro', rules } })).status,
    ).toBe(200)
    const sync = await h.call(`/api/environments/${p.development}/sync`, {
      method: 'POST',
      as: h.admin,
      body: {
        batchId: randomUUID(),
        operations: [{ action: 'insert', collection: 'flags', recordId: 'synced', record: { is_enabled: true } }],
      },
    })
    expect(sync.status, JSON.stringify(sync.body)).toBe(200)
    const got = await receiver.waitFor(from + 2)
    expect(got.slice(from).every((r) => r.verifyError === null)).toBe(true)
    const segment = got.slice(from).find((r) => r.body.type === 'segment.updated')?.body
    expect(segment?.data).toMatchObject({ project_id: p.id, segment_key: 'pro', action: 'created', before: null })
    const flag = got.slice(from).find((r) => r.body.type === 'flag.created')?.body
    expect(flag?.data).toMatchObject({
      environment: { id: p.development, name: 'Development' },
      flag_key: 'synced',
      source: 'sync',
      after: { key: 'synced', is_enabled: true },
    })
  })

  it('change requests emit created and approved (with the flag.updated), rejected and cancelled', async () => {
    const requester = await member(h, p.id, 'editor', 'editor')
    const reviewer = await member(h, p.id, 'editor', 'editor')
    await putFlag(h, p.production, { key: 'gated', is_enabled: false })
    await setRequireApproval(h, p, p.production, true)
    await receiver.waitFor(receiver.received.length)
    await eventually(async () => expect(await pendingCount()).toBe(0))
    const from = receiver.received.length
    const filed = await flagsOf(h, p.production, requester.as).patch('gated', { is_enabled: true })
    expect(filed.status).toBe(202)
    const requests = `/api/environments/${p.production}/change-requests`
    const approve = await h.call(`${requests}/${filed.body.id}/approve`, { method: 'POST', as: reviewer.as, body: {} })
    expect(approve.status).toBe(200)
    const second = await flagsOf(h, p.production, requester.as).patch('gated', { description: 'x' })
    const reject = await h.call(`${requests}/${second.body.id}/reject`, { method: 'POST', as: reviewer.as, body: {} })
    expect(reject.status).toBe(204)
    const third = await flagsOf(h, p.production, requester.as).patch('gated', { description: 'y' })
    expect((await h.call(`${requests}/${third.body.id}`, { method: 'DELETE', as: requester.as })).status).toBe(204)
    await receiver.waitFor(from + 7)
    expect(typesFrom(from).sort()).toEqual([
      'change_request.approved',
      'change_request.cancelled',
      'change_request.created',
      'change_request.created',
      'change_request.created',
      'change_request.rejected',
      'flag.updated',
    ])
    const approved = receiver.received.slice(from).find((r) => r.body.type === 'change_request.approved')?.body
    expect(approved?.data).toMatchObject({
      project_id: p.id,
      environment: { id: p.production, name: 'Production' },
      flag_key: 'gated',
      actor: reviewer.email,
      change_request: {
        id: filed.body.id,
        status: 'approved',
        patch: { is_enabled: true },
        requested_by: requester.email,
      },
    })
    expect(receiver.received.slice(from).every((r) => r.verifyError === null)).toBe(true)
    await setRequireApproval(h, p, p.production, false)
  })

  it('a rolled-back write leaves no delivery; the same write committed leaves one', async () => {
    let fail = true
    const faulty = await openServiceRuntime({
      databaseUrl: h.databaseUrl,
      clock: () => h.clock.now,
      storeOptions: {
        beforeCommit: () => {
          if (fail) throw new Error('injected failure before commit')
        },
      },
    })
    try {
      const write = () =>
        faulty.write(async (_trx, flags) => {
          flags.put({ key: 'rolled', is_enabled: true }, p.staging)
        })
      const before = await deliveryCount()
      await expect(write()).rejects.toThrow()
      expect(await deliveryCount()).toBe(before)
      expect(await h.server.runtime.store.get('rolled', p.staging)).toBeUndefined()
      fail = false
      await write()
      expect(await deliveryCount()).toBe(before + 1)
    } finally {
      await faulty.close()
    }
  })

  it('a test ping, the delivery log page by page, and a redelivery with the same webhook-id', async () => {
    const start = receiver.received.length
    for (const key of ['page-a', 'page-b', 'page-c', 'page-d']) await putFlag(h, p.staging, { key, is_enabled: true })
    await receiver.waitFor(start + 4)
    // The injected clock stands still: a later created_at makes the ping the newest delivery.
    h.clock.advance(1000)
    const ping = await h.call(`/api/projects/${p.id}/webhooks/${hook.id}/test`, { method: 'POST', as: h.admin })
    expect(ping.status).toBe(202)
    expect(ping.body).toMatchObject({ event_type: 'webhook.test', status: 'pending', attempts: 0 })
    const withId = () => receiver.received.filter((r) => r.id === ping.body.id)
    const [got] = await eventually(() => {
      expect(withId()).toHaveLength(1)
      return withId()
    })
    expect(got?.verifyError).toBeNull()
    expect(got?.body).toMatchObject({ type: 'webhook.test', data: { project_id: p.id, webhook_id: hook.id } })

    const base = `/api/projects/${p.id}/webhooks/${hook.id}/deliveries`
    const logged = await eventually(async () => {
      const first = await h.call(`${base}?limit=1`, { as: h.admin })
      expect(first.body.deliveries[0]).toMatchObject({ id: ping.body.id, status: 'delivered', last_status: 200 })
      return first.body
    })
    expect(logged.deliveries[0]).toMatchObject({ attempts: 1, last_response: 'ok', event_type: 'webhook.test' })
    expect(logged.next_cursor).toEqual(expect.any(String))
    const all: string[] = []
    let cursor: string | null = null
    do {
      const page = await h.call(`${base}?limit=3${cursor ? `&cursor=${cursor}` : ''}`, { as: h.admin })
      expect(page.status).toBe(200)
      all.push(...page.body.deliveries.map((d: { id: string }) => d.id))
      cursor = page.body.next_cursor
    } while (cursor)
    const rows = await h.server.runtime.knex(WEBHOOK_TABLES.deliveries).where('webhook_id', hook.id).select('id')
    expect(all.sort()).toEqual(rows.map((r) => r.id).sort())
    expect((await h.call(`${base}?limit=0`, { as: h.admin })).status).toBe(422)
    expect((await h.call(`${base}?cursor=zzz`, { as: h.admin })).status).toBe(422)

    const again = await h.call(`${base}/${ping.body.id}/redeliver`, { method: 'POST', as: h.admin })
    expect(again.status).toBe(202)
    const redelivered = await eventually(() => {
      expect(withId()).toHaveLength(2)
      return withId()[1]
    })
    expect(redelivered?.verifyError).toBeNull()
    expect(redelivered?.raw).toBe(got?.raw)
    expect((await h.call(`${base}/msg_${'0'.repeat(32)}/redeliver`, { method: 'POST', as: h.admin })).status).toBe(404)
  })

  async function deliveryCount(): Promise<number> {
    const row = await h.server.runtime.knex(WEBHOOK_TABLES.deliveries).count({ n: '*' }).first()
    return Number(row?.n)
  }
  async function pendingCount(): Promise<number> {
    const row = await h.server.runtime
      .knex(WEBHOOK_TABLES.deliveries)
      .where('status', 'pending')
      .count({ n: '*' })
      .first()
    return Number(row?.n)
  }
})
