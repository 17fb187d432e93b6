import { DIALECTS } from '@flagsync/test-support/databases'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createProject, flagsOf, keyHeader, member, type Project, putFlag } from '../flags/support.js'
import { bearer, type Caller, DAY, type Harness, startHarness } from '../harness.js'
import { inMs, POLL_MS, schedule, scheduleEntries, scheduleRows, schedulesOf, settled } from './support.js'

describe.each(DIALECTS)('scheduled flag changes on %s', (dialect) => {
  let h: Harness
  let p: Project
  let editor: { as: Caller; email: string }
  let viewer: { as: Caller }
  let n = 0
  const fresh = async (extra: object = {}) => {
    const key = `sched-${++n}`
    await putFlag(h, p.production, { key, is_enabled: false, rollout_percentage: 10, ...extra })
    return key
  }

  beforeAll(async () => {
    h = await startHarness(dialect, { env: { SCHEDULE_POLL_MS: String(POLL_MS) } })
    p = await createProject(h)
    editor = await member(h, p.id, 'editor', 'editor')
    viewer = await member(h, p.id, 'viewer', 'viewer')
  })
  afterAll(async () => {
    await h?.dispose()
  })

  it('creates a pending schedule and lists it per environment and per flag', async () => {
    const key = await fresh()
    const runAt = inMs(h, 60_000)
    const res = await schedulesOf(h, p.production, editor.as).create(key, {
      patch: { is_enabled: true },
      run_at: runAt,
    })
    expect(res.status, JSON.stringify(res.body)).toBe(200)
    expect(res.body).toMatchObject({
      environment_id: p.production,
      flag_key: key,
      patch: { is_enabled: true },
      run_at: runAt,
      status: 'pending',
      created_by: editor.email,
      created_at: new Date(h.clock.now).toISOString(),
      applied_at: null,
      result: null,
      overdue: false,
    })
    expect(typeof res.body.id).toBe('number')
    const ofFlag = await schedulesOf(h, p.production, viewer.as).ofFlag(key)
    expect(ofFlag.status).toBe(200)
    expect(ofFlag.body).toEqual([res.body])
    const pending = await schedulesOf(h, p.production, viewer.as).list('?status=pending')
    expect(pending.body.map((s: { id: number }) => s.id)).toContain(res.body.id)
    expect((await schedulesOf(h, p.production).list('?status=applied')).body).not.toContainEqual(res.body)
  })

  it('refuses bad input with a 422 naming the field, and stores nothing', async () => {
    const key = await fresh()
    const before = await scheduleRows(h)
    const s = schedulesOf(h, p.production)
    const cases: Array<[object, string]> = [
      [{ patch: { is_enabled: true }, run_at: inMs(h, -1000) }, 'run_at'],
      [{ patch: { is_enabled: true }, run_at: inMs(h, 0) }, 'run_at'],
      [{ patch: { is_enabled: true }, run_at: inMs(h, 400 * DAY) }, 'run_at'],
      [{ patch: { is_enabled: true }, run_at: 'tomorrow' }, 'run_at'],
      [{ patch: { is_enabled: true } }, 'run_at'],
      [{ patch: { rollout_percentage: 200 }, run_at: inMs(h, 1000) }, 'patch.rollout_percentage'],
      [{ patch: { colour: 'red' }, run_at: inMs(h, 1000) }, 'patch'],
      [{ patch: {}, run_at: inMs(h, 1000) }, 'patch'],
      [{ patch: { key: 'renamed' }, run_at: inMs(h, 1000) }, 'patch.key'],
      [{ patch: { is_enabled: true }, run_at: inMs(h, 1000), extra: 1 }, 'extra'],
      // Valid as a patch, not in this environment: the same check a PATCH makes.
      [{ patch: { prerequisites: [{ key: 'nope', value: true }] }, run_at: inMs(h, 1000) }, 'prerequisites'],
    ]
    for (const [body, field] of cases) {
      const res = await s.create(key, body)
      expect(res.status, JSON.stringify(body)).toBe(422)
      expect(res.body.code).toBe('validation_failed')
      expect(res.body.issues.map((i: { path: string }) => i.path).join(' '), JSON.stringify(res.body)).toContain(field)
    }
    const badStatus = await s.list('?status=done')
    expect(badStatus.status).toBe(422)
    expect(badStatus.body.issues[0].path).toBe('status')
    expect((await s.create('no-such-flag', { patch: { is_enabled: true }, run_at: inMs(h, 1000) })).status).toBe(404)
    expect(await scheduleRows(h)).toEqual(before)
  })

  it('editors write, viewers read, client keys are refused', async () => {
    const key = await fresh()
    const body = { patch: { is_enabled: true }, run_at: inMs(h, 60_000) }
    expect((await schedulesOf(h, p.production, viewer.as).create(key, body)).status).toBe(403)
    const created = await schedule(h, p.production, key, { is_enabled: true }, 60_000, editor.as)
    expect((await schedulesOf(h, p.production, viewer.as).cancel(created.id)).status).toBe(403)
    expect((await schedulesOf(h, p.production, viewer.as).list()).status).toBe(200)
    const clientKey = await h.call(`/api/projects/${p.id}/keys`, {
      method: 'POST',
      as: h.admin,
      body: { name: 'web', environment_id: p.production, kind: 'client' },
    })
    const asClient = bearer(clientKey.body.key)
    expect((await schedulesOf(h, p.production, asClient).list()).status).toBe(403)
    expect((await schedulesOf(h, p.production, asClient).create(key, body)).status).toBe(403)
    // A server key is admin-equivalent in its project.
    const asServer = bearer(p.sdkKey)
    expect(keyHeader(p.sdkKey).Authorization).toContain(p.sdkKey)
    expect((await schedulesOf(h, p.production, asServer).create(key, body)).status).toBe(200)
  })

  it('applies the patch at run_at as its creator, with the schedule in the audit trail', async () => {
    const key = await fresh({ description: 'kept' })
    const created = await schedule(
      h,
      p.production,
      key,
      { is_enabled: true, rollout_percentage: 50 },
      60_000,
      editor.as,
    )
    await new Promise((r) => setTimeout(r, POLL_MS * 5))
    expect((await flagsOf(h, p.production).get(key)).body.is_enabled).toBe(false) // not yet due
    h.clock.advance(60_000)
    const done = await settled(h, p.production, created.id)
    expect(done).toMatchObject({ status: 'applied', result: { changed: true, late_ms: 0 } })
    expect(done.applied_at).toBe(new Date(h.clock.now).toISOString())
    const flag = (await flagsOf(h, p.production).get(key)).body
    expect(flag).toMatchObject({ is_enabled: true, rollout_percentage: 50, description: 'kept' })
    const entries = await scheduleEntries(h, p.production, key)
    expect(entries).toHaveLength(1)
    expect(entries[0]).toMatchObject({
      action: 'update',
      actor: { name: editor.email, verified: true },
      source: { type: 'schedule', id: created.id, createdBy: { name: editor.email, verified: true } },
      changedFields: ['is_enabled', 'rollout_percentage'],
    })
    expect(entries[0].source).not.toHaveProperty('approvedBy')
  })

  it('fails, changing nothing, when its creator may no longer change flags here: deleted or made a viewer', async () => {
    const gone = await member(h, p.id, 'editor', 'editor')
    const demoted = await member(h, p.id, 'editor', 'editor')
    const stays = await member(h, p.id, 'editor', 'editor')
    const made = []
    for (const who of [gone, demoted, stays]) {
      const key = await fresh()
      made.push({ key, id: (await schedule(h, p.production, key, { is_enabled: true }, 60_000, who.as)).id })
    }
    expect((await h.call(`/api/users/${gone.id}`, { method: 'DELETE', as: h.admin })).status).toBe(204)
    const demote = { method: 'PATCH', as: h.admin, body: { role: 'viewer' } } as const
    expect((await h.call(`/api/projects/${p.id}/members/${demoted.id}`, demote)).status).toBe(200)
    h.clock.advance(60_000)
    const [byGone, byDemoted, byStays] = await Promise.all(made.map((m) => settled(h, p.production, m.id)))
    for (const [done, who] of [
      [byGone, gone],
      [byDemoted, demoted],
    ] as const) {
      expect(done).toMatchObject({ status: 'failed', result: { code: 'forbidden', late_ms: 0 } })
      expect(done.result.reason).toContain(`its creator (${who.email}) may no longer change flags`)
    }
    expect(byStays).toMatchObject({ status: 'applied', result: { changed: true } })
    const enabled = await Promise.all(
      made.map(async (m) => (await flagsOf(h, p.production).get(m.key)).body.is_enabled),
    )
    expect(enabled).toEqual([false, false, true])
  })

  it('cancels a pending schedule, which then never runs; cancelling again or after it ran is a 409', async () => {
    const key = await fresh()
    const created = await schedule(h, p.production, key, { is_enabled: true }, 1000)
    const cancelled = await schedulesOf(h, p.production, editor.as).cancel(created.id)
    expect(cancelled.status).toBe(200)
    expect(cancelled.body).toMatchObject({
      id: created.id,
      status: 'cancelled',
      result: { cancelled_by: editor.email },
    })
    expect((await schedulesOf(h, p.production).cancel(created.id)).body).toMatchObject({ code: 'conflict' })
    h.clock.advance(2000)
    const applied = await schedule(h, p.production, key, { description: 'ran' }, 1000)
    h.clock.advance(2000)
    expect((await settled(h, p.production, applied.id)).status).toBe('applied')
    expect((await flagsOf(h, p.production).get(key)).body.is_enabled).toBe(false)
    const again = await schedulesOf(h, p.production).cancel(applied.id)
    expect(again.status).toBe(409)
    expect(again.body).toMatchObject({ code: 'conflict', status: 'applied' })
    expect((await schedulesOf(h, p.production).cancel(999_999)).status).toBe(404)
  })

  it('fails with the reason when the flag was deleted meanwhile', async () => {
    const key = await fresh()
    const created = await schedule(h, p.production, key, { is_enabled: true }, 1000)
    expect((await flagsOf(h, p.production).delete(key)).status).toBe(204)
    h.clock.advance(2000)
    const done = await settled(h, p.production, created.id)
    expect(done.status).toBe('failed')
    // Deleted since the revision it was created at: the three-way check's conflict, naming the delete.
    expect(done.result).toMatchObject({ code: 'conflict', late_ms: 1000 })
    expect(done.result.reason).toContain(key)
    expect(done.result.reason).toContain('deleted')
    expect(done.result.details.conflicts[0].kind).toBe('deleted')
    expect((await flagsOf(h, p.production).get(key)).status).toBe(404)
  })

  it('applies over changes to other fields, and fails rather than overwrite a change to its own', async () => {
    const key = await fresh()
    const merges = await schedule(h, p.production, key, { is_enabled: true }, 1000)
    const clashes = await schedule(h, p.production, key, { rollout_percentage: 50 }, 1000)
    expect((await flagsOf(h, p.production).patch(key, { description: 'meanwhile' })).status).toBe(200)
    expect((await flagsOf(h, p.production).patch(key, { rollout_percentage: 20 })).status).toBe(200)
    h.clock.advance(2000)
    expect((await settled(h, p.production, merges.id)).status).toBe('applied')
    const failed = await settled(h, p.production, clashes.id)
    expect(failed.status).toBe('failed')
    expect(failed.result.code).toBe('conflict')
    expect(failed.result.details.conflicts[0].fields).toEqual(['rollout_percentage'])
    const flag = (await flagsOf(h, p.production).get(key)).body
    expect(flag).toMatchObject({ is_enabled: true, rollout_percentage: 20, description: 'meanwhile' })
  })

  it('records schedule.applied and schedule.failed for the project webhooks in the apply transaction', async () => {
    const knex = h.server.runtime.knex
    const hookId = `hook-${++n}`
    await knex('flagsync_webhooks').insert({
      id: hookId,
      project_id: p.id,
      url: 'http://127.0.0.1:9/hook',
      events: JSON.stringify(['schedule.applied', 'schedule.failed']),
      description: null,
      secret: 'whsec_test',
      enabled: true,
      disabled_reason: null,
      failing_since: null,
      created_at: h.clock.now,
      updated_at: h.clock.now,
    })
    const key = await fresh()
    const ok = await schedule(h, p.production, key, { is_enabled: true }, 1000, editor.as)
    const gone = await schedule(h, p.production, key, { description: 'x' }, 1000)
    await h.server.runtime.knex('flagsync_schedules').where('id', gone.id).update({ flag_key: 'deleted-meanwhile' })
    h.clock.advance(2000)
    expect((await settled(h, p.production, ok.id)).status).toBe('applied')
    expect((await settled(h, p.production, gone.id)).status).toBe('failed')
    const rows = (await knex('flagsync_webhook_deliveries').where('webhook_id', hookId).select('event_type', 'payload'))
      .map((r: { event_type: string; payload: string }) => ({ type: r.event_type, body: JSON.parse(r.payload) }))
      .sort((a: { type: string }, b: { type: string }) => a.type.localeCompare(b.type))
    expect(rows).toHaveLength(2)
    expect(rows[0]).toMatchObject({
      type: 'schedule.applied',
      body: {
        type: 'schedule.applied',
        data: {
          environment_id: p.production,
          flag_key: key,
          schedule_id: ok.id,
          created_by: editor.email,
          approved_by: null,
          result: { changed: true, late_ms: 1000 },
        },
      },
    })
    expect(rows[1]).toMatchObject({
      type: 'schedule.failed',
      body: { data: { schedule_id: gone.id, flag_key: 'deleted-meanwhile', result: { code: 'not_found' } } },
    })
  })
})
