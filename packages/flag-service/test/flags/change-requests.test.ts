import { DIALECTS } from '@flagsync/test-support/databases'
import type { SseReader } from '@flagsync/test-support/sse-reader'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { type Caller, type Harness, type Json, startHarness, T0 } from '../harness.js'
import {
  bootstrapOf,
  createProject,
  flagsOf,
  keyHeader,
  member,
  openStream,
  type Project,
  putFlag,
  setRequireApproval,
  snapshotOfDatabase,
  storeRevision,
} from './support.js'

/**
 * Section 3's change-request table, row by row, in an environment that
 * requires approval: requester R (project editor), reviewer V (another
 * project editor), a workspace admin A, and O (a project editor who is neither).
 */
describe.each(DIALECTS)('change requests on %s', (dialect) => {
  let h: Harness
  let p: Project
  let requester: { as: Caller; email: string }
  let reviewer: { as: Caller; email: string }
  let other: { as: Caller; email: string }
  const readers: SseReader[] = []
  const base = () => `/api/environments/${p.production}/change-requests`
  const approve = (id: number, as: Caller) => h.call(`${base()}/${id}/approve`, { method: 'POST', as })
  const reject = (id: number, as: Caller, body?: Json) => h.call(`${base()}/${id}/reject`, { method: 'POST', as, body })
  const cancel = (id: number, as: Caller) => h.call(`${base()}/${id}`, { method: 'DELETE', as })
  const getRequest = async (id: number) => (await h.call(`${base()}/${id}`, { as: h.admin })).body
  let n = 0
  /** A fresh flag and a pending request from R that turns it on; the stream must not have heard of the request. */
  const file = async (patch: Json = { is_enabled: true }) => {
    const key = `cr-${++n}`
    await putFlag(h, p.production, { key, is_enabled: false, rollout_percentage: 10 })
    const res = await flagsOf(h, p.production, requester.as).patch(key, patch)
    expect(res.status, JSON.stringify(res.body)).toBe(202)
    return { key, request: res.body as Json }
  }

  beforeAll(async () => {
    h = await startHarness(dialect)
    p = await createProject(h)
    requester = await member(h, p.id, 'editor', 'editor')
    reviewer = await member(h, p.id, 'editor', 'editor')
    other = await member(h, p.id, 'editor', 'editor')
    await setRequireApproval(h, p, p.production, true)
  })
  afterEach(() => {
    for (const r of readers.splice(0)) r.close()
  })
  afterAll(async () => {
    await h?.dispose()
  })

  it('(none) → pending: a PATCH answers 202 with the request; the flag and its streams are unchanged', async () => {
    await putFlag(h, p.production, { key: 'queued', is_enabled: false })
    const stream = await openStream(h, keyHeader(p.sdkKey))
    readers.push(stream)
    await bootstrapOf(stream)
    const seen = stream.events.length
    const res = await flagsOf(h, p.production, requester.as).patch('queued', { is_enabled: true, description: 'on' })
    expect(res.status).toBe(202)
    expect(res.body).toEqual({
      id: expect.any(Number),
      environment_id: p.production,
      flag_key: 'queued',
      patch: { is_enabled: true, description: 'on' },
      requested_by: requester.email,
      status: 'pending',
      reviewed_by: null,
      reason: null,
      created_at: new Date(T0).toISOString(),
      reviewed_at: null,
      // The flag's revision it was filed against, and whether the flag changed since.
      base_revision: await storeRevision(h.server.runtime.knex, p.production, 'queued'),
      stale: false,
    })
    expect((await flagsOf(h, p.production).get('queued')).body).toMatchObject({ is_enabled: false, description: null })
    expect(await getRequest(res.body.id)).toEqual(res.body)
    // A sentinel proves nothing was broadcast for the request.
    await putFlag(h, p.production, { key: 'sentinel', is_enabled: true })
    await stream.waitFor((e) => e.data.includes('sentinel'), 5000, seen)
    expect(stream.events.length).toBe(seen + 1)
  })

  it('(none): the patch is validated first (422, nothing filed), and a missing flag is a 404', async () => {
    await putFlag(h, p.production, { key: 'strict', is_enabled: false })
    const before = await snapshotOfDatabase(h)
    const api = flagsOf(h, p.production, requester.as)
    expect((await api.patch('strict', { rollout_percentage: 101 })).status).toBe(422)
    expect((await api.patch('strict', { default_value: 'not a boolean' })).status).toBe(422)
    expect((await api.patch('strict', { prerequisites: [{ flag_key: 'nope' }] })).status).toBe(422)
    expect((await api.patch('missing', { is_enabled: true })).status).toBe(404)
    expect(await snapshotOfDatabase(h)).toEqual(before)
  })

  it('pending → approved by someone else: 200 with the flag, the stored patch applied to its current state', async () => {
    const { key, request } = await file({ is_enabled: true })
    // The flag changes after filing (an admin may change it directly): approval patches this state, not a snapshot.
    await putFlag(h, p.production, { key, is_enabled: false, rollout_percentage: 75, description: 'changed meanwhile' })
    const stream = await openStream(h, keyHeader(p.sdkKey))
    readers.push(stream)
    await bootstrapOf(stream)
    const seen = stream.events.length
    h.clock.advance(60_000)
    const res = await approve(request.id, reviewer.as)
    expect(res.status).toBe(200)
    expect(res.body).toMatchObject({ key, is_enabled: true, rollout_percentage: 75, description: 'changed meanwhile' })
    expect((await flagsOf(h, p.production).get(key)).body).toEqual(res.body)
    expect(await getRequest(request.id)).toMatchObject({
      status: 'approved',
      reviewed_by: reviewer.email,
      reviewed_at: new Date(h.clock.now).toISOString(),
    })
    const event = await stream.waitFor(() => true, 5000, seen)
    expect(JSON.parse(event.data)).toEqual({ type: 'UPSERT', env_id: p.production, flag: res.body })
  })

  it('pending → approve by the requester: 403, still pending (also through their token)', async () => {
    const { key, request } = await file()
    expect((await approve(request.id, requester.as)).status).toBe(403)
    const token = await h.createToken(requester.as, 'read_write')
    expect((await approve(request.id, { kind: 'bearer', secret: token })).status).toBe(403)
    expect((await getRequest(request.id)).status).toBe('pending')
    expect((await flagsOf(h, p.production).get(key)).body.is_enabled).toBe(false)
  })

  it('pending → rejected with a reason: 204, the flag is never touched', async () => {
    const { key, request } = await file()
    const before = (await flagsOf(h, p.production).get(key)).body
    expect((await reject(request.id, reviewer.as, { reason: 'not this week' })).status).toBe(204)
    expect(await getRequest(request.id)).toMatchObject({
      status: 'rejected',
      reason: 'not this week',
      reviewed_by: reviewer.email,
    })
    expect((await flagsOf(h, p.production).get(key)).body).toEqual(before)
    // The reason is optional.
    const second = await file()
    expect((await reject(second.request.id, reviewer.as)).status).toBe(204)
    expect(await getRequest(second.request.id)).toMatchObject({ status: 'rejected', reason: null })
  })

  it('pending → cancelled by the requester: 204', async () => {
    const { key, request } = await file()
    expect((await cancel(request.id, requester.as)).status).toBe(204)
    expect(await getRequest(request.id)).toMatchObject({ status: 'cancelled', reviewed_by: requester.email })
    expect((await flagsOf(h, p.production).get(key)).body.is_enabled).toBe(false)
  })

  it('pending → cancelled by a workspace admin: 204; anyone else gets 404 and it stays pending', async () => {
    const { request } = await file()
    expect((await cancel(request.id, other.as)).status).toBe(404)
    expect((await cancel(request.id, reviewer.as)).status).toBe(404)
    expect((await getRequest(request.id)).status).toBe('pending')
    expect((await cancel(request.id, h.admin)).status).toBe(204)
    expect(await getRequest(request.id)).toMatchObject({ status: 'cancelled', reviewed_by: 'admin@example.com' })
  })

  it.each(['approved', 'rejected', 'cancelled'] as const)(
    '%s → approve: 409 and unchanged (reject and cancel too)',
    async (status) => {
      const { key, request } = await file()
      if (status === 'approved') expect((await approve(request.id, reviewer.as)).status).toBe(200)
      if (status === 'rejected') expect((await reject(request.id, reviewer.as, { reason: 'no' })).status).toBe(204)
      if (status === 'cancelled') expect((await cancel(request.id, requester.as)).status).toBe(204)
      const settled = await getRequest(request.id)
      const flag = (await flagsOf(h, p.production).get(key)).body
      const res = await approve(request.id, other.as)
      expect(res.status).toBe(409)
      expect(res.body.code).toBe('conflict')
      expect((await reject(request.id, other.as)).status).toBe(409)
      expect((await cancel(request.id, requester.as)).status).toBe(409)
      expect(await getRequest(request.id)).toEqual(settled)
      expect((await flagsOf(h, p.production).get(key)).body).toEqual(flag)
    },
  )

  it('approving after the flag was deleted is a 409, and a patch no longer valid for the flag as it is now a 422; both stay pending', async () => {
    const gone = await file()
    expect((await flagsOf(h, p.production).delete(gone.key)).status).toBe(204)
    expect((await approve(gone.request.id, reviewer.as)).status).toBe(409)
    expect((await getRequest(gone.request.id)).status).toBe('pending')

    await putFlag(h, p.production, { key: 'will-vanish', is_enabled: true })
    const stale = await file({ prerequisites: [{ flag_key: 'will-vanish' }] })
    expect((await flagsOf(h, p.production).delete('will-vanish')).status).toBe(204)
    const res = await approve(stale.request.id, reviewer.as)
    expect(res.status).toBe(422)
    expect(res.body.issues).toEqual([
      { path: 'prerequisites[0].flag_key', message: 'no flag "will-vanish" in this environment' },
    ])
    expect((await getRequest(stale.request.id)).status).toBe('pending')
  })

  it('lists newest first, filtered by status; 422 for an unknown status, 404 for unknown ids and other environments', async () => {
    const q = await createProject(h)
    const editor = await member(h, q.id, 'editor', 'editor')
    await setRequireApproval(h, q, q.staging, true)
    await putFlag(h, q.staging, { key: 'l', is_enabled: false })
    const ids: number[] = []
    for (const patch of [{ is_enabled: true }, { description: 'b' }, { description: 'c' }]) {
      ids.push((await flagsOf(h, q.staging, editor.as).patch('l', patch)).body.id)
    }
    const listBase = `/api/environments/${q.staging}/change-requests`
    expect((await h.call(`${listBase}/${ids[0]}/reject`, { method: 'POST', as: h.admin })).status).toBe(204)
    expect((await h.call(`${listBase}/${ids[1]}`, { method: 'DELETE', as: editor.as })).status).toBe(204)
    const list = async (query = '') =>
      ((await h.call(`${listBase}${query}`, { as: h.admin })).body as Json[]).map((r) => r.id)
    expect(await list()).toEqual([...ids].reverse())
    expect(await list('?status=pending')).toEqual([ids[2]])
    expect(await list('?status=rejected')).toEqual([ids[0]])
    expect(await list('?status=cancelled')).toEqual([ids[1]])
    expect(await list('?status=approved')).toEqual([])
    expect((await h.call(`${listBase}?status=open`, { as: h.admin })).status).toBe(422)
    // Viewers read; unknown and foreign ids are 404s.
    const viewer = await member(h, q.id, 'editor', 'viewer')
    expect((await h.call(listBase, { as: viewer.as })).status).toBe(200)
    expect((await h.call(`${listBase}/${ids[2]}/approve`, { method: 'POST', as: viewer.as })).status).toBe(403)
    expect((await h.call(`${listBase}/999999`, { as: h.admin })).status).toBe(404)
    expect((await h.call(`${listBase}/abc/approve`, { method: 'POST', as: h.admin })).status).toBe(404)
    expect((await h.call(`${base()}/${ids[2]}/approve`, { method: 'POST', as: h.admin })).status).toBe(404)
    expect((await h.call(`${base()}/${ids[2]}`, { method: 'DELETE', as: h.admin })).status).toBe(404)
    expect((await h.call(`${listBase}/${ids[2]}/approve`, { method: 'GET', as: h.admin })).status).toBe(405)
  })

  it('without require-approval a PATCH applies at once (200); an SDK key files and cannot approve its own request', async () => {
    await putFlag(h, p.staging, { key: 'direct', is_enabled: false })
    const res = await flagsOf(h, p.staging, requester.as).patch('direct', { is_enabled: true })
    expect(res.status).toBe(200)
    expect(res.body.is_enabled).toBe(true)

    const key = { kind: 'bearer' as const, secret: p.sdkKey }
    const { key: flagKey } = await file()
    const filed = await flagsOf(h, p.production, key).patch(flagKey, { description: 'by key' })
    expect(filed.status).toBe(202)
    expect(filed.body.requested_by).toMatch(/^sk_live_/)
    expect((await approve(filed.body.id, key)).status).toBe(403)
    expect((await approve(filed.body.id, requester.as)).status).toBe(200)
  })
})
