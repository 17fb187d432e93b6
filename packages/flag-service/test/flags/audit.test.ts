import { serviceAuditPageSchema } from '@flagsync/protocol'
import { DIALECTS } from '@flagsync/test-support/databases'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type Caller, type Harness, type Json, startHarness } from '../harness.js'
import { createProject, flagsOf, member, type Project, putFlag, setRequireApproval } from './support.js'

/** The audit routes of the flag service: per flag, per environment, per project. */
describe.each(DIALECTS)('the flag service audit trail on %s', (dialect) => {
  let h: Harness
  let p: Project
  let viewer: { as: Caller; email: string }
  const page = (path: string, as: Caller = h.admin) => h.call(path, { as })

  beforeAll(async () => {
    h = await startHarness(dialect)
    p = await createProject(h)
    viewer = await member(h, p.id, 'editor', 'viewer')
    for (let i = 0; i < 5; i++) await putFlag(h, p.production, { key: 'paged', is_enabled: i % 2 === 0 })
    await putFlag(h, p.staging, { key: 'elsewhere', is_enabled: true })
    await putFlag(h, p.production, { key: 'gone', is_enabled: true })
    expect((await flagsOf(h, p.production).delete('gone')).status).toBe(204)
  })
  afterAll(async () => {
    await h?.dispose()
  })

  it('a flag’s history: newest first, cursor pages, since; deleted flags keep theirs', async () => {
    const base = `/api/environments/${p.production}/flags/paged/history`
    const all = await page(base)
    expect(all.status).toBe(200)
    expect(all.res.headers.get('cache-control')).toBe('no-store')
    const revisions = (all.body.entries as Json[]).map((e) => e.revision)
    expect(revisions).toHaveLength(5)
    expect([...revisions].sort((a, b) => b - a)).toEqual(revisions)
    expect(all.body.entries[4]).toMatchObject({ action: 'create', before: null, beforeKnown: true })
    expect(all.body.entries[0]).toMatchObject({
      action: 'update',
      changedFields: ['is_enabled'],
      before: expect.objectContaining({ is_enabled: false }),
      after: expect.objectContaining({ is_enabled: true }),
      environment_id: p.production,
    })
    const first = await page(`${base}?limit=2`)
    expect(first.body.entries.map((e: Json) => e.revision)).toEqual(revisions.slice(0, 2))
    const second = await page(`${base}?limit=2&cursor=${first.body.nextCursor}`)
    expect(second.body.entries.map((e: Json) => e.revision)).toEqual(revisions.slice(2, 4))
    const last = await page(`${base}?limit=2&cursor=${second.body.nextCursor}`)
    expect(last.body).toMatchObject({ nextCursor: null })
    expect(last.body.entries.map((e: Json) => e.revision)).toEqual(revisions.slice(4))
    expect((await page(`${base}?since=${revisions[2]}`)).body.entries.map((e: Json) => e.revision)).toEqual(
      revisions.slice(0, 2),
    )
    const gone = await page(`/api/environments/${p.production}/flags/gone/history`)
    expect(gone.body.entries.map((e: Json) => e.action)).toEqual(['delete', 'create'])
    // A key no flag ever had: an empty trail.
    expect((await page(`/api/environments/${p.production}/flags/never/history`)).body).toEqual({
      entries: [],
      nextCursor: null,
    })
  })

  it('per environment and per project, deletes included; project viewers read; others 404; bad queries 422', async () => {
    const env = await page(`/api/environments/${p.production}/changes`, viewer.as)
    expect(env.status).toBe(200)
    expect(new Set((env.body.entries as Json[]).map((e) => e.key))).toEqual(new Set(['paged', 'gone']))
    const project = await page(`/api/projects/${p.id}/changes?limit=1000`, viewer.as)
    expect(project.status).toBe(200)
    const entries = project.body.entries as Json[]
    expect(entries.map((e) => `${e.environment_id === p.staging ? 'staging' : 'production'}:${e.key}`)).toEqual([
      'production:gone',
      'production:gone',
      'staging:elsewhere',
      'production:paged',
      'production:paged',
      'production:paged',
      'production:paged',
      'production:paged',
    ])
    const other = await createProject(h)
    expect((await page(`/api/projects/${other.id}/changes`, viewer.as)).status).toBe(404)
    expect((await page(`/api/environments/${other.production}/changes`, viewer.as)).status).toBe(404)
    for (const query of ['limit=0', 'limit=1001', 'cursor=x', 'since=-1', 'bogus=1', 'limit=1&limit=2']) {
      const res = await page(`/api/environments/${p.production}/changes?${query}`)
      expect(res.status, query).toBe(422)
      expect(res.body.code).toBe('validation_failed')
      expect((await page(`/api/projects/${p.id}/changes?${query}`)).status, query).toBe(422)
      expect((await page(`/api/environments/${p.production}/flags/paged/history?${query}`)).status, query).toBe(422)
    }
    expect((await h.call(`/api/projects/${p.id}/changes`, { method: 'POST', as: h.admin })).status).toBe(405)
    expect((await h.call(`/api/environments/${p.production}/changes`, { method: 'DELETE', as: h.admin })).status).toBe(
      405,
    )
  })

  it('an approved change request is its source, the approver its actor, the requester beside them', async () => {
    await setRequireApproval(h, p, p.development, true)
    const requester = await member(h, p.id, 'editor', 'editor')
    await putFlag(h, p.development, { key: 'reviewed', is_enabled: false })
    const filed = await flagsOf(h, p.development, requester.as).patch('reviewed', { is_enabled: true })
    expect(filed.status).toBe(202)
    const approved = await h.call(`/api/environments/${p.development}/change-requests/${filed.body.id}/approve`, {
      method: 'POST',
      as: h.admin,
    })
    expect(approved.status).toBe(200)
    const history = (await page(`/api/environments/${p.development}/flags/reviewed/history`)).body
    expect(serviceAuditPageSchema.safeParse(history).success).toBe(true)
    const expected = {
      actor: { name: 'admin@example.com', verified: true },
      source: {
        type: 'change_request',
        id: filed.body.id,
        requestedBy: { name: requester.email, verified: true },
      },
      changedFields: ['is_enabled'],
    }
    expect(history.entries[0]).toMatchObject(expected)
    // The environment's and the project's changes name both too.
    for (const path of [`/api/environments/${p.development}/changes`, `/api/projects/${p.id}/changes`]) {
      const entries = (await page(path)).body.entries as Json[]
      expect(entries.find((e) => e.key === 'reviewed' && e.source?.type === 'change_request')).toMatchObject(expected)
    }
  })
})
