import { DIALECTS } from '@flagsync/test-support/databases'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { createProject, openStream, parsed, putFlag } from './flags/support.js'
import { type Caller, type Harness, startHarness } from './harness.js'

const cookieHeader = (c: Caller) => ({ Cookie: (c as { cookie: string }).cookie })
/** A dashboard stream that follows no environment: only the events every dashboard gets. */
const peopleStream = (h: Harness, as: Caller) => openStream(h, cookieHeader(as), '?environment_id=')
const isPeople = (e: { event?: string }) => e.event === 'people'

describe.each(DIALECTS)('people events on dashboard streams on %s', (dialect) => {
  let h: Harness
  beforeEach(async () => {
    h = await startHarness(dialect)
  })
  afterEach(async () => {
    await h.dispose()
  })

  it('an empty environment_id follows no environment: connected, ready "0", no flags', async () => {
    const project = await createProject(h)
    await putFlag(h, project.production, { key: 'shown-elsewhere', is_enabled: true })
    const stream = await peopleStream(h, h.admin)
    expect(stream.status).toBe(200)
    await stream.waitFor((e) => e.event === 'ready')
    expect(parsed(stream)).toEqual([
      ['connected', { environment_id: null }],
      ['ready', '0'],
    ])
    await putFlag(h, project.production, { key: 'later', is_enabled: false })
    const named = await openStream(h, cookieHeader(h.admin), `?environment_id=${project.production}`)
    await named.waitFor((e) => e.event === 'update' && e.data.includes('"later"'), 2000, 1)
    expect(stream.events.some((e) => e.event === 'update')).toBe(false)
    stream.close()
    named.close()
  })

  it('an SDK key with an empty environment_id is told it is for dashboards (403), not that it names another', async () => {
    const res = await h.call('/stream?environment_id=', { headers: { Authorization: `Bearer ${h.defaultSdkKey}` } })
    expect(res).toMatchObject({ status: 403, body: { code: 'forbidden' } })
    expect(res.body.error).toBe(
      'an empty environment_id (people events alone) is for dashboard sessions; an SDK key streams its own environment: drop environment_id',
    )
  })

  it('a role or name change reaches every dashboard stream as people {user_id, action}', async () => {
    const id = await h.createUser({ email: 'bob@example.com', role: 'editor', password: 'password-123' })
    const bob = await h.login('bob@example.com', 'password-123')
    const bobs = await peopleStream(h, bob)
    const admins = await peopleStream(h, h.admin)
    await Promise.all([bobs, admins].map((s) => s.waitFor((e) => e.event === 'ready')))
    const res = await h.call(`/api/users/${id}`, { method: 'PATCH', as: h.admin, body: { role: 'admin' } })
    expect(res.status).toBe(200)
    for (const stream of [bobs, admins]) {
      const event = await stream.waitFor(isPeople, 2000)
      expect(JSON.parse(event.data)).toEqual({ user_id: id, action: 'user.updated' })
    }
    // Promotion keeps Bob's stream open: he sees more, not less.
    expect((await h.call('/api/auth/me', { as: bob })).body).toMatchObject({ role: 'admin' })
    const unchanged = await h.call(`/api/users/${id}`, { method: 'PATCH', as: h.admin, body: { role: 'admin' } })
    expect(unchanged.status).toBe(200)
    const from = bobs.events.length
    await h.call(`/api/users/${id}`, { method: 'PATCH', as: h.admin, body: { name: 'Robert' } })
    await bobs.waitFor(isPeople, 2000, from)
    // A change that changes nothing tells nobody: one event for the role, one for the name.
    expect(bobs.events.filter(isPeople)).toHaveLength(2)
    bobs.close()
    admins.close()
  })

  it("an admin's reset tells the user's stream why, then closes it", async () => {
    const id = await h.createUser({ email: 'bob@example.com', role: 'editor', password: 'password-123' })
    const bob = await h.login('bob@example.com', 'password-123')
    const stream = await peopleStream(h, bob)
    await stream.waitFor((e) => e.event === 'ready')
    const res = await h.request(`/api/users/${id}/password`, {
      method: 'POST',
      as: h.admin,
      body: { password: 'brand-new-pass' },
    })
    expect(res.status).toBe(204)
    await stream.ended
    expect(parsed(stream).filter(([name]) => name === 'people')).toEqual([
      ['people', { user_id: id, action: 'user.password_reset' }],
    ])
  })

  it("a user's own change tells their other session's stream why, then closes it; this one stays", async () => {
    const id = await h.createUser({ email: 'bob@example.com', role: 'editor', password: 'password-123' })
    const here = await h.login('bob@example.com', 'password-123')
    const elsewhere = await h.login('bob@example.com', 'password-123')
    const [mine, other] = [await peopleStream(h, here), await peopleStream(h, elsewhere)]
    await Promise.all([mine, other].map((s) => s.waitFor((e) => e.event === 'ready')))
    const res = await h.request('/api/auth/password', {
      method: 'POST',
      as: here,
      body: { current_password: 'password-123', new_password: 'password-456' },
    })
    expect(res.status).toBe(204)
    await other.ended
    const why = { user_id: id, action: 'user.password_changed' }
    expect(parsed(other).filter(([name]) => name === 'people')).toEqual([['people', why]])
    expect(JSON.parse((await mine.waitFor(isPeople, 2000)).data)).toEqual(why)
    const state = await Promise.race([mine.ended.then(() => 'ended'), new Promise((r) => setTimeout(r, 300, 'open'))])
    expect(state).toBe('open')
    mine.close()
  })
})
