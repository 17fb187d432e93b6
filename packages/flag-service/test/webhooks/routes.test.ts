import { DIALECTS } from '@flagsync/test-support/databases'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { WEBHOOK_TABLES } from '../../src/webhooks/index.js'
import { createProject, flagsOf, member, type Project, putFlag, sdkKeyFor } from '../flags/support.js'
import { bearer, type Harness } from '../harness.js'
import { createWebhook, type Receiver, startReceiver, startWebhookHarness } from './support.js'

describe.each(DIALECTS)('webhook routes on %s', (dialect) => {
  let h: Harness
  let p: Project
  let receiver: Receiver
  const base = () => `/api/projects/${p.id}/webhooks`

  beforeAll(async () => {
    h = await startWebhookHarness(dialect)
    p = await createProject(h)
    receiver = await startReceiver()
  })
  afterAll(async () => {
    await h?.dispose()
    // Every delivery the suite caused, verified as a receiver would.
    expect(receiver?.received.filter((got) => got.verifyError !== null)).toEqual([])
    await receiver?.close()
  })

  it('create shows a Standard Webhooks secret once; list, read, rotate, disable and delete', async () => {
    const created = await h.call(base(), {
      method: 'POST',
      as: h.admin,
      body: { url: receiver.url, events: ['flag.created', 'flag.deleted'], description: 'audit sink' },
    })
    expect(created.status).toBe(200)
    expect(created.body).toMatchObject({
      id: expect.any(String),
      project_id: p.id,
      url: receiver.url,
      events: ['flag.created', 'flag.deleted'],
      description: 'audit sink',
      enabled: true,
      disabled_reason: null,
      created_at: expect.any(String),
    })
    const secret = created.body.secret as string
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]+=*$/)
    expect(Buffer.from(secret.slice('whsec_'.length), 'base64').length).toBeGreaterThanOrEqual(24)

    const id = created.body.id as string
    const { secret: _shownOnce, ...withoutSecret } = created.body
    const list = await h.call(base(), { as: h.admin })
    expect(list.status).toBe(200)
    expect(list.body).toEqual([withoutSecret])
    expect(JSON.stringify(list.body)).not.toContain(secret)
    const read = await h.call(`${base()}/${id}`, { as: h.admin })
    expect(read.body).toEqual(withoutSecret)

    const rotated = await h.call(`${base()}/${id}`, { method: 'PATCH', as: h.admin, body: { rotate_secret: true } })
    expect(rotated.status).toBe(200)
    expect(rotated.body.secret).toMatch(/^whsec_/)
    expect(rotated.body.secret).not.toBe(secret)
    const stored = await h.server.runtime.knex(WEBHOOK_TABLES.webhooks).where('id', id).first('secret')
    expect(stored.secret).toBe(rotated.body.secret)

    const off = await h.call(`${base()}/${id}`, {
      method: 'PATCH',
      as: h.admin,
      body: { enabled: false, events: ['*'], description: null },
    })
    expect(off.status).toBe(200)
    expect(off.body).toMatchObject({ enabled: false, events: ['*'], description: null })
    expect(off.body.disabled_reason).toEqual(expect.any(String))
    expect(off.body.secret).toBeUndefined()
    const on = await h.call(`${base()}/${id}`, { method: 'PATCH', as: h.admin, body: { enabled: true } })
    expect(on.body).toMatchObject({ enabled: true, disabled_reason: null })

    expect((await h.call(`${base()}/${id}`, { method: 'DELETE', as: h.admin })).status).toBe(204)
    expect((await h.call(`${base()}/${id}`, { as: h.admin })).status).toBe(404)
    expect((await h.call(base(), { as: h.admin })).body).toEqual([])
  })

  it('bad input is a 422 naming the field, and nothing is stored', async () => {
    const cases: Array<[unknown, string]> = [
      [{ url: 'ftp://example.com/hook', events: ['flag.created'] }, 'url'],
      [{ url: 'not a url', events: ['flag.created'] }, 'url'],
      [{ url: 'https://user:pw@example.com/hook', events: ['flag.created'] }, 'url'],
      [{ url: 'https://example.com/hook', events: ['flag.renamed'] }, 'events[0]'],
      [{ url: 'https://example.com/hook', events: [] }, 'events'],
      [{ url: 'https://example.com/hook' }, 'events'],
      [{ url: 'https://example.com/hook', events: ['*', 'flag.created'] }, 'events'],
      [{ url: 'https://example.com/hook', events: ['*'], secret: 'whsec_mine' }, 'secret'],
    ]
    for (const [body, path] of cases) {
      const res = await h.call(base(), { method: 'POST', as: h.admin, body })
      expect(res.status, JSON.stringify(body)).toBe(422)
      expect(res.body).toMatchObject({ code: 'validation_failed', error: expect.stringContaining(path) })
      expect(res.body.issues.map((i: { path: string }) => i.path)).toContain(path)
    }
    const hook = await createWebhook(h, p.id, receiver, ['flag.created'])
    const patch = await h.call(`${base()}/${hook.id}`, { method: 'PATCH', as: h.admin, body: { url: 'javascript:x' } })
    expect(patch.status).toBe(422)
    expect((await h.call(`${base()}/${hook.id}`, { method: 'PATCH', as: h.admin, body: {} })).status).toBe(422)
    const rows = await h.server.runtime.knex(WEBHOOK_TABLES.webhooks).where('project_id', p.id)
    expect(rows.map((r) => r.url)).toEqual([receiver.url])
    await h.call(`${base()}/${hook.id}`, { method: 'DELETE', as: h.admin })
  })

  it('a body of the wrong shape gets one issue per problem, none about a check of another type', async () => {
    const asString = await h.call(base(), {
      method: 'POST',
      as: h.admin,
      body: { url: receiver.url, events: 'flag.updated' },
    })
    expect(asString.status).toBe(422)
    expect(asString.body.issues).toEqual([{ path: 'events', message: expect.stringContaining('expected array') }])
    const hook = await createWebhook(h, p.id, receiver, ['flag.created'])
    const unknown = await h.call(`${base()}/${hook.id}`, { method: 'PATCH', as: h.admin, body: { secret: 'whsec_x' } })
    expect(unknown.status).toBe(422)
    expect(unknown.body.issues).toEqual([{ path: 'secret', message: 'unknown field' }])
    await h.call(`${base()}/${hook.id}`, { method: 'DELETE', as: h.admin })
  })

  it('redelivering an unknown delivery is a 404, also on a disabled webhook; a known one there is a 409', async () => {
    const hook = await createWebhook(h, p.id, receiver, ['flag.created'])
    const ping = await h.call(`${base()}/${hook.id}/test`, { method: 'POST', as: h.admin })
    expect(ping.status).toBe(202)
    await h.call(`${base()}/${hook.id}`, { method: 'PATCH', as: h.admin, body: { enabled: false } })
    const unknown = `${base()}/${hook.id}/deliveries/msg_${'0'.repeat(32)}/redeliver`
    const missing = await h.call(unknown, { method: 'POST', as: h.admin })
    expect(missing.status).toBe(404)
    expect(missing.body.code).toBe('not_found')
    const known = await h.call(`${base()}/${hook.id}/deliveries/${ping.body.id}/redeliver`, {
      method: 'POST',
      as: h.admin,
    })
    expect(known.status).toBe(409)
    expect(known.body).toMatchObject({ code: 'conflict', disabled_reason: 'disabled by a project admin' })
    await h.call(`${base()}/${hook.id}`, { method: 'DELETE', as: h.admin })
  })

  it('project admins and server keys manage webhooks; editors, viewers and client keys get 403', async () => {
    const editor = await member(h, p.id, 'editor', 'editor')
    const viewer = await member(h, p.id, 'viewer', 'viewer')
    const projectAdmin = await member(h, p.id, 'editor', 'admin')
    const clientKey = await h.call(`/api/projects/${p.id}/keys`, {
      method: 'POST',
      as: h.admin,
      body: { name: 'page', environment_id: p.production, kind: 'client' },
    })
    const serverKey = await sdkKeyFor(h, p.id, p.production)
    const body = { url: receiver.url, events: ['flag.updated'] }
    for (const as of [editor.as, viewer.as, bearer(clientKey.body.key)]) {
      expect((await h.call(base(), { as })).status).toBe(403)
      expect((await h.call(base(), { method: 'POST', as, body })).status).toBe(403)
    }
    const byAdmin = await h.call(base(), { method: 'POST', as: projectAdmin.as, body })
    expect(byAdmin.status).toBe(200)
    const byKey = await h.call(base(), { method: 'POST', as: bearer(serverKey), body })
    expect(byKey.status).toBe(200)
    for (const id of [byAdmin.body.id, byKey.body.id]) {
      expect((await h.call(`${base()}/${id}`, { method: 'DELETE', as: bearer(serverKey) })).status).toBe(204)
    }
    const other = await createProject(h)
    expect((await h.call(`/api/projects/${other.id}/webhooks`, { as: bearer(serverKey) })).status).toBe(404)
  })

  it('a flag write delivers flag.created, flag.updated and flag.deleted, signed, with before and after', async () => {
    const q = await createProject(h)
    const target = await startReceiver()
    try {
      await createWebhook(h, q.id, target, ['flag.created', 'flag.updated', 'flag.deleted'])
      const created = await putFlag(h, q.staging, { key: 'beta', is_enabled: false })
      expect((await flagsOf(h, q.staging).patch('beta', { is_enabled: true })).status).toBe(200)
      expect((await flagsOf(h, q.staging).delete('beta')).status).toBe(204)
      const got = await target.waitFor(3)
      expect(got.map((r) => r.verifyError)).toEqual([null, null, null])
      const byType = new Map(got.map((r) => [r.body.type, r]))
      expect([...byType.keys()].sort()).toEqual(['flag.created', 'flag.deleted', 'flag.updated'])
      const updated = byType.get('flag.updated')?.body
      expect(updated).toMatchObject({
        type: 'flag.updated',
        timestamp: expect.any(String),
        data: {
          project_id: q.id,
          environment: { id: q.staging, name: 'Staging' },
          flag_key: 'beta',
          actor: 'admin@example.com',
          before: { key: 'beta', is_enabled: false },
          after: { key: 'beta', is_enabled: true },
          revision: expect.any(Number),
        },
      })
      expect(byType.get('flag.created')?.body.data).toMatchObject({ before: null, after: { is_enabled: false } })
      expect(byType.get('flag.created')?.body.data.revision).toBe(created.revision)
      expect(byType.get('flag.deleted')?.body.data).toMatchObject({ before: { is_enabled: true }, after: null })
      const headers = got[0]?.headers ?? {}
      expect(headers['content-type']).toBe('application/json')
      expect(String(headers['webhook-timestamp'])).toMatch(/^\d{10}$/)
      expect(String(headers['webhook-signature'])).toMatch(/^v1,[A-Za-z0-9+/]+=*$/)
      expect(new Set(got.map((r) => r.id)).size).toBe(3)
    } finally {
      await target.close()
    }
  })
})
