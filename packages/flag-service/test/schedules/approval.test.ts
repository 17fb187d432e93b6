import { DIALECTS } from '@flagsync/test-support/databases'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createProject, flagsOf, member, type Project, putFlag, setRequireApproval } from '../flags/support.js'
import type { Caller, Harness } from '../harness.js'
import { startHarness } from '../harness.js'
import { POLL_MS, schedule, scheduleEntries, schedulesOf, settled } from './support.js'

/**
 * In an environment that requires approval a schedule runs only once someone other than its creator approved it;
 * past its run_at it waits, marked overdue, and runs as soon as it is approved.
 */
describe.each(DIALECTS)('scheduled changes that need approval on %s', (dialect) => {
  let h: Harness
  let p: Project
  let creator: { as: Caller; email: string }
  let reviewer: { as: Caller; email: string }
  let n = 0
  const fresh = async () => {
    const key = `appr-${++n}`
    await putFlag(h, p.production, { key, is_enabled: false })
    return key
  }
  const row = async (id: number) =>
    (await schedulesOf(h, p.production).list()).body.find((s: { id: number }) => s.id === id)

  beforeAll(async () => {
    h = await startHarness(dialect, { env: { SCHEDULE_POLL_MS: String(POLL_MS) } })
    p = await createProject(h)
    creator = await member(h, p.id, 'editor', 'editor')
    reviewer = await member(h, p.id, 'editor', 'editor')
    await setRequireApproval(h, p, p.production, true)
  })
  afterAll(async () => {
    await h?.dispose()
  })

  it('an unapproved schedule never applies; past run_at it is overdue; approved, it applies promptly', async () => {
    const key = await fresh()
    const created = await schedule(h, p.production, key, { is_enabled: true }, 1000, creator.as)
    expect(created).toMatchObject({ requires_approval: true, approved_by: null, overdue: false })
    h.clock.advance(5000)
    await new Promise((r) => setTimeout(r, POLL_MS * 10))
    expect(await row(created.id)).toMatchObject({ status: 'pending', overdue: true })
    expect((await flagsOf(h, p.production).get(key)).body.is_enabled).toBe(false)

    const byCreator = await schedulesOf(h, p.production, creator.as).approve(created.id)
    expect(byCreator.status).toBe(403)
    expect((await row(created.id)).approved_by).toBeNull()

    const approved = await schedulesOf(h, p.production, reviewer.as).approve(created.id)
    expect(approved.status).toBe(200)
    expect(approved.body).toMatchObject({ approved_by: reviewer.email, overdue: false })
    const done = await settled(h, p.production, created.id)
    expect(done).toMatchObject({ status: 'applied', result: { changed: true, late_ms: 4000 } })
    expect((await flagsOf(h, p.production).get(key)).body.is_enabled).toBe(true)
    const [entry, ...more] = await scheduleEntries(h, p.production, key)
    expect(more).toEqual([])
    expect(entry).toMatchObject({
      actor: { name: creator.email, verified: true },
      source: {
        type: 'schedule',
        id: created.id,
        createdBy: { name: creator.email, verified: true },
        approvedBy: { name: reviewer.email, verified: true },
      },
    })
    expect((await schedulesOf(h, p.production, reviewer.as).approve(created.id)).status).toBe(409)
  })

  it('an approval before run_at waits for run_at; a second approval is a 409', async () => {
    const key = await fresh()
    const created = await schedule(h, p.production, key, { is_enabled: true }, 60_000, creator.as)
    expect((await schedulesOf(h, p.production, reviewer.as).approve(created.id)).status).toBe(200)
    const again = await schedulesOf(h, p.production, h.admin).approve(created.id)
    expect(again.status).toBe(409)
    await new Promise((r) => setTimeout(r, POLL_MS * 5))
    expect((await row(created.id)).status).toBe('pending')
    h.clock.advance(60_000)
    expect((await settled(h, p.production, created.id)).status).toBe('applied')
  })

  it('an environment that switches approval on holds schedules created before', async () => {
    const key = `appr-dev-${++n}`
    await putFlag(h, p.development, { key, is_enabled: false })
    const created = await schedule(h, p.development, key, { is_enabled: true }, 1000, creator.as)
    await setRequireApproval(h, p, p.development, true)
    h.clock.advance(2000)
    await new Promise((r) => setTimeout(r, POLL_MS * 10))
    const listed = (await schedulesOf(h, p.development).list()).body[0]
    expect(listed).toMatchObject({ id: created.id, status: 'pending', overdue: true })
    expect((await schedulesOf(h, p.development, reviewer.as).approve(created.id)).status).toBe(200)
    expect((await settled(h, p.development, created.id)).status).toBe('applied')
  })
})
