import { randomUUID } from 'node:crypto'
import { serviceAuditPageSchema } from '@flagsync/protocol'
import { DIALECTS } from '@flagsync/test-support/databases'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type Caller, type Harness, type Json, startHarness } from '../harness.js'
import { POLL_MS, schedule, schedulesOf, settled } from '../schedules/support.js'
import { createProject, flagsOf, member, type Project, putFlag, setRequireApproval } from './support.js'

type Person = { as: Caller; id: number; email: string }
const verified = (who: Person) => ({ name: who.email, verified: true })

/**
 * Every kind of source names the people behind a change, on every change route: a change request its requester
 * and (as the actor) its approver, however it was filed or approved; a schedule its creator and approver.
 */
describe.each(DIALECTS)('who the change history names, per source, on %s', (dialect) => {
  let h: Harness
  let p: Project
  let ann: Person
  let dan: Person
  let cat: Person

  /** The entries of `key` in the environment, from its history, the environment's changes and the project's. */
  async function entriesOf(envId: string, key: string): Promise<Json[]> {
    const paths = [
      `/api/environments/${envId}/flags/${key}/history`,
      `/api/environments/${envId}/changes?flag=${key}`,
      `/api/projects/${p.id}/changes?flag=${key}&environment_id=${envId}`,
    ]
    const pages = await Promise.all(paths.map((path) => h.call(path, { as: h.admin })))
    for (const page of pages) expect(serviceAuditPageSchema.safeParse(page.body).success).toBe(true)
    const [history, ...others] = pages.map((page) => page.body.entries as Json[])
    for (const other of others) expect(other).toEqual(history)
    return history ?? []
  }
  const approve = (envId: string, id: number, query = '') =>
    h.call(`/api/environments/${envId}/change-requests/${id}/approve${query}`, { method: 'POST', as: dan.as })

  beforeAll(async () => {
    h = await startHarness(dialect, { env: { SCHEDULE_POLL_MS: String(POLL_MS) } })
    p = await createProject(h)
    ann = await member(h, p.id, 'editor', 'editor')
    dan = await member(h, p.id, 'editor', 'editor')
    cat = await member(h, p.id, 'editor', 'editor')
    await setRequireApproval(h, p, p.staging, true)
  })
  afterAll(async () => {
    await h?.dispose()
  })

  it('a change request: its requester and its approver, when approved as filed', async () => {
    await putFlag(h, p.staging, { key: 'asked', is_enabled: false })
    const filed = await flagsOf(h, p.staging, ann.as).patch('asked', { is_enabled: true })
    expect(filed.status).toBe(202)
    expect((await approve(p.staging, filed.body.id)).status).toBe(200)
    const [entry] = await entriesOf(p.staging, 'asked')
    expect(entry).toMatchObject({
      actor: verified(dan),
      source: { type: 'change_request', id: filed.body.id, requestedBy: verified(ann) },
    })
  })

  it('a change request: its requester and its approver, when approved by force over a newer change', async () => {
    await putFlag(h, p.staging, { key: 'forced', is_enabled: false, rollout_percentage: 10 })
    const mine = await flagsOf(h, p.staging, ann.as).patch('forced', { rollout_percentage: 60 })
    const theirs = await flagsOf(h, p.staging, cat.as).patch('forced', { rollout_percentage: 40 })
    expect((await approve(p.staging, theirs.body.id)).status).toBe(200)
    expect((await approve(p.staging, mine.body.id)).status).toBe(409)
    expect((await approve(p.staging, mine.body.id, '?force=true')).status).toBe(200)
    const [forced, first] = await entriesOf(p.staging, 'forced')
    expect(forced).toMatchObject({
      actor: verified(dan),
      source: { type: 'change_request', id: mine.body.id, requestedBy: verified(ann) },
    })
    expect(first).toMatchObject({
      actor: verified(dan),
      source: { type: 'change_request', id: theirs.body.id, requestedBy: verified(cat) },
    })
  })

  it('a change request a sync batch filed: its requester and its approver', async () => {
    await putFlag(h, p.staging, { key: 'synced', is_enabled: false })
    const body = {
      batchId: randomUUID(),
      operations: [{ action: 'update', collection: 'flags', recordId: 'synced', changes: { is_enabled: true } }],
    }
    const res = await h.call(`/api/environments/${p.staging}/sync`, { method: 'POST', as: ann.as, body })
    expect(res.status, JSON.stringify(res.body)).toBe(200)
    const [request] = res.body.change_requests as Json[]
    expect((await approve(p.staging, request.id)).status).toBe(200)
    const [entry] = await entriesOf(p.staging, 'synced')
    expect(entry).toMatchObject({
      actor: verified(dan),
      source: { type: 'change_request', id: request.id, requestedBy: verified(ann) },
    })
  })

  it('a schedule: its creator and, where someone approved it, its approver', async () => {
    await putFlag(h, p.production, { key: 'timed', is_enabled: false })
    const approved = await schedule(h, p.production, 'timed', { is_enabled: true }, 1000, ann.as)
    expect((await schedulesOf(h, p.production, dan.as).approve(approved.id)).status).toBe(200)
    const alone = await schedule(h, p.production, 'timed', { rollout_percentage: 50 }, 2000, cat.as)
    h.clock.advance(2000)
    expect((await settled(h, p.production, approved.id)).status).toBe('applied')
    expect((await settled(h, p.production, alone.id)).status).toBe('applied')
    // Both are due in the same pass; the runner may apply them in either order (it starts at a random batch).
    const entries = await entriesOf(p.production, 'timed')
    const bySchedule = (id: number) => entries.find((e) => (e.source as Json | undefined)?.id === id)
    const [first, second] = [bySchedule(approved.id), bySchedule(alone.id)]
    expect(first).toMatchObject({
      actor: verified(ann),
      source: { type: 'schedule', id: approved.id, createdBy: verified(ann), approvedBy: verified(dan) },
    })
    expect(second).toMatchObject({ actor: verified(cat), source: { type: 'schedule', id: alone.id } })
    expect(second.source).toEqual({ type: 'schedule', id: alone.id, createdBy: verified(cat) })
  })

  it('a promotion: the person who promoted, and the environment it came from', async () => {
    expect((await flagsOf(h, p.development, ann.as).put({ key: 'carried', is_enabled: true })).status).toBe(200)
    expect((await flagsOf(h, p.development, cat.as).promote('carried', p.production)).status).toBe(200)
    const [promoted] = await entriesOf(p.production, 'carried')
    expect(promoted).toMatchObject({
      action: 'create',
      actor: verified(cat),
      source: { type: 'other', name: 'promote from Development' },
    })
  })

  it('an API write and a sync batch: the one person who made them', async () => {
    expect((await flagsOf(h, p.production, ann.as).put({ key: 'direct', is_enabled: false })).status).toBe(200)
    const batchId = randomUUID()
    const body = {
      batchId,
      operations: [{ action: 'update', collection: 'flags', recordId: 'direct', changes: { is_enabled: true } }],
    }
    const res = await h.call(`/api/environments/${p.production}/sync`, { method: 'POST', as: cat.as, body })
    expect(res.status).toBe(200)
    const [synced, created] = await entriesOf(p.production, 'direct')
    expect(synced).toMatchObject({ actor: verified(cat), source: { type: 'sync', batchId, operationIndex: 0 } })
    expect(created).toMatchObject({ actor: verified(ann), source: { type: 'api', route: expect.any(String) } })
  })
})
