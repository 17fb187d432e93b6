import { DIALECTS } from '@flagsync/test-support/databases'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { SERVICE_TABLES } from '../src/tables.js'
import { openStream } from './flags/support.js'
import { ADMIN_PASSWORD, bearer, type Caller, type Harness, startHarness } from './harness.js'

const BIDI_MESSAGE =
  'must not contain bidirectional embedding, override or isolate characters (U+202A–U+202E, U+2066–U+2069)'
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
const cookieHeader = (c: Caller) => ({ Cookie: (c as { cookie: string }).cookie })

describe.each(DIALECTS)('people management on %s', (dialect) => {
  let h: Harness
  beforeEach(async () => {
    h = await startHarness(dialect)
  })
  afterEach(async () => {
    await h.dispose()
  })

  const audit = async () => (await h.call('/api/users/audit', { as: h.admin })).body

  describe('PATCH /api/users/:id', () => {
    it('changes role and name, answers the user and audits who changed what', async () => {
      const id = await h.createUser({ email: 'eve@example.com', role: 'viewer', name: 'Eve' })
      const res = await h.call(`/api/users/${id}`, {
        method: 'PATCH',
        as: h.admin,
        body: { role: 'editor', name: 'Eve E' },
      })
      expect(res.status).toBe(200)
      expect(res.body).toMatchObject({ id, name: 'Eve E', role: 'editor', email: 'eve@example.com' })
      const list = (await h.call('/api/users', { as: h.admin })).body as Array<{ id: number; role: string }>
      expect(list.find((u) => u.id === id)).toMatchObject({ role: 'editor', name: 'Eve E' })
      expect((await audit()).entries).toEqual([
        {
          id: expect.any(Number),
          at: expect.any(String),
          actor: h.adminId,
          action: 'user.updated',
          target_user_id: id,
          details: { role: { from: 'viewer', to: 'editor' }, name: { from: 'Eve', to: 'Eve E' } },
        },
        expect.objectContaining({ action: 'user.created', target_user_id: id }),
      ])
    })

    it('refuses bad input (422 naming the field), unknown users (404) and non-admins (403), storing nothing', async () => {
      const id = await h.createUser({ email: 'eve@example.com', role: 'editor', password: 'password-123' })
      const eve = await h.login('eve@example.com', 'password-123')
      const before = await h.dump()
      const bad = await h.call(`/api/users/${id}`, { method: 'PATCH', as: h.admin, body: { role: 'owner' } })
      expect(bad.status).toBe(422)
      expect(bad.body).toMatchObject({ code: 'validation_failed', issues: [{ path: 'role' }] })
      const extra = await h.call(`/api/users/${id}`, { method: 'PATCH', as: h.admin, body: { email: 'x@y.z' } })
      expect(extra.status).toBe(422)
      expect(JSON.stringify(extra.body)).toContain('email')
      const empty = await h.call(`/api/users/${id}`, { method: 'PATCH', as: h.admin, body: {} })
      expect(empty.status).toBe(422)
      const blank = await h.call(`/api/users/${id}`, { method: 'PATCH', as: h.admin, body: { name: ' ' } })
      expect(blank.body).toMatchObject({ code: 'validation_failed', issues: [{ path: 'name' }] })
      const missing = await h.call('/api/users/9999', { method: 'PATCH', as: h.admin, body: { name: 'X' } })
      expect(missing).toMatchObject({ status: 404, body: { code: 'not_found' } })
      const notAdmin = await h.call(`/api/users/${h.adminId}`, { method: 'PATCH', as: eve, body: { role: 'viewer' } })
      expect(notAdmin).toMatchObject({ status: 403, body: { code: 'forbidden' } })
      expect(await h.dump()).toEqual(before)
    })

    it('refuses a name with bidirectional controls (422), which would reorder every sentence naming it', async () => {
      const id = await h.createUser({ email: 'eve@example.com', role: 'viewer', name: 'Eve' })
      const before = await h.dump()
      for (const name of ['Eve\u202Enimda', 'Eve\u2066x\u2069', '\u202Aa']) {
        const res = await h.call(`/api/users/${id}`, { method: 'PATCH', as: h.admin, body: { name } })
        expect(res).toMatchObject({
          status: 422,
          body: { code: 'validation_failed', issues: [{ path: 'name', message: BIDI_MESSAGE }] },
        })
      }
      const created = await h.call('/api/users', {
        method: 'POST',
        as: h.admin,
        body: { name: 'Mallory\u202E', email: 'm@example.com', role: 'viewer', password: 'password-123' },
      })
      expect(created).toMatchObject({ status: 422, body: { issues: [{ path: 'name', message: BIDI_MESSAGE }] } })
      expect(await h.dump()).toEqual(before)
      const rtl = await h.call(`/api/users/${id}`, { method: 'PATCH', as: h.admin, body: { name: 'אבי Avi' } })
      expect(rtl).toMatchObject({ status: 200, body: { name: 'אבי Avi' } })
    })

    it('answers 409 for demoting the last admin, and lets one of two go', async () => {
      const before = await h.dump()
      const last = await h.call(`/api/users/${h.adminId}`, { method: 'PATCH', as: h.admin, body: { role: 'editor' } })
      expect(last).toMatchObject({
        status: 409,
        body: { code: 'conflict', error: 'cannot demote the last admin: make another user admin first' },
      })
      expect(await h.dump()).toEqual(before)
      const other = await h.createUser({ email: 'bo@example.com', role: 'admin' })
      const ok = await h.call(`/api/users/${other}`, { method: 'PATCH', as: h.admin, body: { role: 'viewer' } })
      expect(ok.status).toBe(200)
    })

    it('two admins demoting each other at once: exactly one succeeds, an admin always remains', async () => {
      for (let round = 0; round < 4; round++) {
        const email = `rival-${round}@example.com`
        const rivalId = await h.createUser({ email, role: 'admin', password: 'password-123' })
        const rival = await h.login(email, 'password-123')
        const me = await h.login('admin@example.com', ADMIN_PASSWORD)
        const results = await Promise.all([
          h.call(`/api/users/${rivalId}`, { method: 'PATCH', as: me, body: { role: 'viewer' } }),
          h.call(`/api/users/${h.adminId}`, { method: 'PATCH', as: rival, body: { role: 'viewer' } }),
        ])
        expect(results.filter((r) => r.status === 200)).toHaveLength(1)
        expect(results.map((r) => r.status).sort()).toEqual([200, 403])
        const admins = await h.server.runtime.knex(SERVICE_TABLES.users).where('role', 'admin').pluck('id')
        expect(admins).toHaveLength(1)
        // Restore the setup admin for the next round (and demote the rival if it won).
        const winner = Number(admins[0])
        if (winner !== h.adminId) {
          const asWinner = results[1]?.status === 200 ? rival : me
          await h.call(`/api/users/${h.adminId}`, { method: 'PATCH', as: asWinner, body: { role: 'admin' } })
          await h.call(`/api/users/${winner}`, { method: 'PATCH', as: h.admin, body: { role: 'viewer' } })
        }
      }
    })

    it('two admins each demoting themselves at once: exactly one succeeds, the other is a 409', async () => {
      for (let round = 0; round < 4; round++) {
        const email = `self-${round}@example.com`
        const otherId = await h.createUser({ email, role: 'admin', password: 'password-123' })
        const other = await h.login(email, 'password-123')
        const me = await h.login('admin@example.com', ADMIN_PASSWORD)
        const results = await Promise.all([
          h.call(`/api/users/${h.adminId}`, { method: 'PATCH', as: me, body: { role: 'editor' } }),
          h.call(`/api/users/${otherId}`, { method: 'PATCH', as: other, body: { role: 'editor' } }),
        ])
        expect(results.map((r) => r.status).sort()).toEqual([200, 409])
        const admins = await h.server.runtime.knex(SERVICE_TABLES.users).where('role', 'admin').pluck('id')
        expect(admins).toHaveLength(1)
        // The setup admin is the admin of the next round.
        if (Number(admins[0]) !== h.adminId) {
          await h.call(`/api/users/${h.adminId}`, { method: 'PATCH', as: other, body: { role: 'admin' } })
          await h.call(`/api/users/${otherId}`, { method: 'PATCH', as: h.admin, body: { role: 'viewer' } })
        }
      }
    })
  })

  describe('POST /api/users/:id/password', () => {
    it('sets the password and ends the user session, token and open stream at once', async () => {
      const id = await h.createUser({ email: 'eve@example.com', role: 'admin', password: 'password-123' })
      const eve = await h.login('eve@example.com', 'password-123')
      const token = await h.createToken(eve, 'read_write')
      const stream = await openStream(h, cookieHeader(eve))
      await stream.waitFor((e) => e.event === 'ready')
      const res = await h.request(`/api/users/${id}/password`, {
        method: 'POST',
        as: h.admin,
        body: { password: 'brand-new-pass' },
      })
      expect(res.status).toBe(204)
      expect((await h.call('/api/auth/me', { as: eve })).status).toBe(401)
      expect((await h.call('/api/users', { as: bearer(token) })).status).toBe(401)
      await expect(Promise.race([stream.ended.then(() => 'ended'), sleep(2000).then(() => 'open')])).resolves.toBe(
        'ended',
      )
      await h.login('eve@example.com', 'brand-new-pass')
      const [entry] = (await audit()).entries
      expect(entry).toMatchObject({
        actor: h.adminId,
        action: 'user.password_reset',
        target_user_id: id,
        details: { sessions_ended: 1, tokens_revoked: 1 },
      })
      expect(JSON.stringify(await audit())).not.toContain('brand-new-pass')
    })

    it('ends a login lockout: the user signs in with the new password at once', async () => {
      const id = await h.createUser({ email: 'eve@example.com', role: 'editor', password: 'password-123' })
      for (let i = 0; i < 5; i++) {
        await h.call('/api/auth/login', { method: 'POST', body: { email: 'eve@example.com', password: 'guess-123' } })
      }
      const locked = await h.call('/api/auth/login', {
        method: 'POST',
        body: { email: 'eve@example.com', password: 'password-123' },
      })
      expect(locked.status).toBe(429)
      const path = `/api/users/${id}/password`
      expect(
        (await h.request(path, { method: 'POST', as: h.admin, body: { password: 'brand-new-pass' } })).status,
      ).toBe(204)
      await h.login('eve@example.com', 'brand-new-pass')
    })

    it('refuses resetting your own (422): your own password changes with the current one', async () => {
      const before = await h.dump()
      const res = await h.call(`/api/users/${h.adminId}/password`, {
        method: 'POST',
        as: h.admin,
        body: { password: 'taken-over-123' },
      })
      expect(res).toMatchObject({
        status: 422,
        body: {
          code: 'validation_failed',
          error: 'you cannot reset your own password: change it with your current one (POST /api/auth/password)',
        },
      })
      expect(await h.dump()).toEqual(before)
      expect((await h.call('/api/auth/me', { as: h.admin })).status).toBe(200)
    })

    it('refuses a password with an unpaired surrogate, which hashing would turn into U+FFFD (422)', async () => {
      const id = await h.createUser({ email: 'eve@example.com', role: 'editor', password: 'password-123' })
      const before = await h.dump()
      const res = await h.call(`/api/users/${id}/password`, {
        method: 'POST',
        as: h.admin,
        body: { password: '\uD800password' },
      })
      expect(res).toMatchObject({
        status: 422,
        body: { issues: [{ path: 'password', message: 'must not contain unpaired surrogates' }] },
      })
      expect(await h.dump()).toEqual(before)
    })

    it('refuses a short password (422), unknown users (404) and non-admins (403), storing nothing', async () => {
      const id = await h.createUser({ email: 'eve@example.com', role: 'editor', password: 'password-123' })
      const eve = await h.login('eve@example.com', 'password-123')
      const before = await h.dump()
      const path = `/api/users/${id}/password`
      const short = await h.call(path, { method: 'POST', as: h.admin, body: { password: '1234567' } })
      expect(short.body).toEqual({
        error: 'invalid password reset: password: must be at least 8 characters',
        code: 'validation_failed',
        issues: [{ path: 'password', message: 'must be at least 8 characters' }],
      })
      expect(short.status).toBe(422)
      const missing = await h.call('/api/users/9999/password', {
        method: 'POST',
        as: h.admin,
        body: { password: 'x'.repeat(9) },
      })
      expect(missing.status).toBe(404)
      const notAdmin = await h.call(path, { method: 'POST', as: eve, body: { password: 'x'.repeat(9) } })
      expect(notAdmin.status).toBe(403)
      expect(await h.dump()).toEqual(before)
    })
  })

  describe('POST /api/auth/password', () => {
    it('changes the own password: other sessions end, this one and tokens stay', async () => {
      const id = await h.createUser({ email: 'eve@example.com', role: 'editor', password: 'password-123' })
      const here = await h.login('eve@example.com', 'password-123')
      const elsewhere = await h.login('eve@example.com', 'password-123')
      const token = await h.createToken(here, 'read_only')
      const res = await h.request('/api/auth/password', {
        method: 'POST',
        as: here,
        body: { current_password: 'password-123', new_password: 'password-456' },
      })
      expect(res.status).toBe(204)
      expect((await h.call('/api/auth/me', { as: here })).status).toBe(200)
      expect((await h.call('/api/auth/me', { as: elsewhere })).status).toBe(401)
      expect((await h.call('/api/users', { as: bearer(token) })).status).toBe(200)
      await h.login('eve@example.com', 'password-456')
      expect((await audit()).entries[0]).toMatchObject({
        actor: id,
        action: 'user.password_changed',
        target_user_id: id,
        details: { sessions_ended: 1 },
      })
    })

    it('refuses a wrong current password (403, counted), a short new one (422) and a token (403)', async () => {
      await h.createUser({ email: 'eve@example.com', role: 'editor', password: 'password-123' })
      const eve = await h.login('eve@example.com', 'password-123')
      const token = await h.createToken(eve, 'read_write')
      const before = await h.dump()
      const wrong = await h.call('/api/auth/password', {
        method: 'POST',
        as: eve,
        body: { current_password: 'nope-nope', new_password: 'password-456' },
      })
      expect(wrong).toMatchObject({ status: 403, body: { code: 'forbidden', attempts_remaining: 4 } })
      const short = await h.call('/api/auth/password', {
        method: 'POST',
        as: eve,
        body: { current_password: 'password-123', new_password: 'short' },
      })
      expect(short).toMatchObject({ status: 422, body: { issues: [{ path: 'new_password' }] } })
      const long = await h.call('/api/auth/password', {
        method: 'POST',
        as: eve,
        body: { current_password: 'x'.repeat(1025), new_password: 'password-456' },
      })
      expect(long.body).toMatchObject({
        issues: [{ path: 'current_password', message: 'must be at most 1024 characters' }],
      })
      const byToken = await h.call('/api/auth/password', {
        method: 'POST',
        as: bearer(token),
        body: { current_password: 'password-123', new_password: 'password-456' },
      })
      expect(byToken.status).toBe(403)
      // Only the failed attempt is recorded (toward the lockout); a token's use stamps it.
      const after = await h.dump()
      for (const table of [SERVICE_TABLES.users, SERVICE_TABLES.sessions, SERVICE_TABLES.peopleAudit]) {
        expect(after[table]).toEqual(before[table])
      }
      expect(after[SERVICE_TABLES.loginFailures]).toHaveLength(1)
      await h.login('eve@example.com', 'password-123')
    })
  })

  it('audits adding and deleting a user with who they were, and tells open dashboards', async () => {
    const admins = await openStream(h, cookieHeader(h.admin), '?environment_id=')
    await admins.waitFor((e) => e.event === 'ready')
    const id = await h.createUser({ email: 'eve@example.com', role: 'editor', name: 'Eve' })
    const added = await admins.waitFor((e) => e.event === 'people', 2000)
    expect(JSON.parse(added.data)).toEqual({ user_id: id, action: 'user.created' })
    expect((await h.request(`/api/users/${id}`, { method: 'DELETE', as: h.admin })).status).toBe(204)
    const person = { name: 'Eve', email: 'eve@example.com', role: 'editor' }
    expect((await audit()).entries).toEqual([
      expect.objectContaining({ actor: h.adminId, action: 'user.deleted', target_user_id: id, details: person }),
      expect.objectContaining({ actor: h.adminId, action: 'user.created', target_user_id: id, details: person }),
    ])
    await admins.waitFor((e) => e.event === 'people' && e.data.includes('user.deleted'), 2000)
    admins.close()
  })

  it('GET /api/users/audit pages newest first and is for workspace admins only', async () => {
    const id = await h.createUser({ email: 'eve@example.com', role: 'viewer', password: 'password-123' })
    for (const name of ['A', 'B', 'C']) {
      await h.call(`/api/users/${id}`, { method: 'PATCH', as: h.admin, body: { name } })
    }
    const first = (await h.call('/api/users/audit?limit=2', { as: h.admin })).body
    expect(first.entries.map((e: { details: { name: { to: string } } }) => e.details.name.to)).toEqual(['C', 'B'])
    const next = (await h.call(`/api/users/audit?limit=2&cursor=${first.nextCursor}`, { as: h.admin })).body
    expect(next.entries.map((e: { action: string }) => e.action)).toEqual(['user.updated', 'user.created'])
    expect(next.entries[0].details.name.to).toBe('A')
    expect(next.nextCursor).toBeNull()
    expect((await h.call('/api/users/audit?limit=0', { as: h.admin })).status).toBe(422)
    const eve = await h.login('eve@example.com', 'password-123')
    expect((await h.call('/api/users/audit', { as: eve })).status).toBe(403)
  })
})
