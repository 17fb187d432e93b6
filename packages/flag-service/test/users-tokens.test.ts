import { DIALECTS } from '@flagsync/test-support/databases'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { SERVICE_TABLES } from '../src/tables.js'
import { ADMIN_EMAIL, bearer, DAY, type Harness, MINUTE, startHarness, T0 } from './harness.js'

describe.each(DIALECTS)('users and personal access tokens on %s', (dialect) => {
  let h: Harness
  beforeEach(async () => {
    h = await startHarness(dialect)
  })
  afterEach(async () => {
    await h.dispose()
  })

  describe('users', () => {
    it('POST creates a user (email lowercased, no password in the answer) and GET lists them', async () => {
      const created = await h.call('/api/users', {
        method: 'POST',
        as: h.admin,
        body: { name: 'Eve', email: 'Eve@Example.com', role: 'editor', password: '12345678' },
      })
      expect(created.status).toBe(200)
      expect(created.body).toEqual({
        id: expect.any(Number),
        name: 'Eve',
        email: 'eve@example.com',
        role: 'editor',
        created_at: new Date(T0).toISOString(),
      })
      const list = await h.call('/api/users', { as: h.admin })
      expect(list.status).toBe(200)
      expect(list.body).toEqual([
        { id: h.adminId, name: 'Ada Admin', email: ADMIN_EMAIL, role: 'admin', created_at: new Date(T0).toISOString() },
        created.body,
      ])
      // The new user can log in.
      await h.login('eve@example.com', '12345678')
    })

    it('answers 409 {error, code} when the email is in use, whatever its case', async () => {
      await h.createUser({ email: 'eve@example.com', role: 'viewer' })
      const before = await h.dump()
      const res = await h.call('/api/users', {
        method: 'POST',
        as: h.admin,
        body: { name: 'Eve 2', email: 'EVE@example.com', role: 'admin', password: '12345678' },
      })
      expect(res).toMatchObject({
        status: 409,
        body: { error: 'the email "eve@example.com" is in use', code: 'conflict' },
      })
      expect(await h.dump()).toEqual(before)
    })

    it('answers 422 for a password under 8 characters', async () => {
      const res = await h.call('/api/users', {
        method: 'POST',
        as: h.admin,
        body: { name: 'Eve', email: 'eve@example.com', role: 'viewer', password: '1234567' },
      })
      expect(res.status).toBe(422)
      expect(res.body).toEqual({
        error: 'invalid user: password: must be at least 8 characters',
        code: 'validation_failed',
        issues: [{ path: 'password', message: 'must be at least 8 characters' }],
      })
    })

    it('DELETE removes a user with their sessions, tokens and memberships (204)', async () => {
      const id = await h.createUser({ email: 'eve@example.com', role: 'editor', password: 'password-123' })
      const eve = await h.login('eve@example.com', 'password-123')
      const token = await h.createToken(eve, 'read_write')
      await h.call(`/api/projects/${h.defaultProjectId}/members`, {
        method: 'POST',
        as: h.admin,
        body: { user_id: id, role: 'editor' },
      })
      const res = await h.request(`/api/users/${id}`, { method: 'DELETE', as: h.admin })
      expect(res.status).toBe(204)
      expect((await h.call('/api/auth/me', { as: eve })).status).toBe(401)
      expect((await h.call('/api/projects', { as: bearer(token) })).status).toBe(401)
      const dump = await h.dump()
      expect(dump[SERVICE_TABLES.tokens]).toEqual([])
      expect(dump[SERVICE_TABLES.members]).toEqual([])
      expect(dump[SERVICE_TABLES.sessions]).toHaveLength(1) // the admin's
    })

    it('DELETE answers 422 for yourself, 409 for the last admin, 404 for a missing user', async () => {
      await h.createUser({ email: 'second@example.com', role: 'admin', password: 'password-123' })
      const self = await h.call(`/api/users/${h.adminId}`, { method: 'DELETE', as: h.admin })
      expect(self).toMatchObject({
        status: 422,
        body: { code: 'validation_failed', error: 'you cannot delete yourself' },
      })

      const second = await h.login('second@example.com', 'password-123')
      expect((await h.request(`/api/users/${h.adminId}`, { method: 'DELETE', as: second })).status).toBe(204)
      const secondId = (await h.call('/api/auth/me', { as: second })).body.id
      const last = await h.call(`/api/users/${secondId}`, { method: 'DELETE', as: second })
      expect(last).toMatchObject({
        status: 409,
        body: { code: 'conflict', error: 'cannot delete the last admin: make another user admin first' },
      })
      for (const id of ['9999', 'abc', '0', '-1', '99999999999']) {
        const res = await h.call(`/api/users/${id}`, { method: 'DELETE', as: second })
        expect(res).toMatchObject({ status: 404, body: { code: 'not_found' } })
      }
    })
  })

  describe('personal access tokens', () => {
    it('POST returns the full token once; GET lists display prefixes without it', async () => {
      const res = await h.call('/api/tokens', {
        method: 'POST',
        as: h.admin,
        body: { name: 'ci', scope: 'read_write', expires_in_days: 30 },
      })
      expect(res.status).toBe(200)
      expect(res.body).toEqual({
        id: expect.any(Number),
        name: 'ci',
        token: expect.stringMatching(/^pat_[A-Za-z0-9_-]{43}$/),
        prefix: expect.stringMatching(/^pat_.{8}…$/),
        scope: 'read_write',
        created_at: new Date(T0).toISOString(),
        last_used_at: null,
        expires_at: new Date(T0 + 30 * DAY).toISOString(),
      })
      expect(res.body.token.startsWith(res.body.prefix.slice(0, -1))).toBe(true)
      const never = await h.call('/api/tokens', {
        method: 'POST',
        as: h.admin,
        body: { name: 'forever', scope: 'read_only' },
      })
      expect(never.body.expires_at).toBeNull()
      const nullExpiry = await h.call('/api/tokens', {
        method: 'POST',
        as: h.admin,
        body: { name: 'also forever', scope: 'read_only', expires_in_days: null },
      })
      expect(nullExpiry.body.expires_at).toBeNull()

      const list = await h.call('/api/tokens', { as: h.admin })
      expect(list.status).toBe(200)
      expect(list.body).toHaveLength(3)
      for (const token of list.body) {
        expect(token).not.toHaveProperty('token')
        expect(Object.keys(token).sort()).toEqual(
          ['created_at', 'expires_at', 'id', 'last_used_at', 'name', 'prefix', 'scope'].sort(),
        )
      }
      expect(list.body[0]).toEqual({ ...res.body, token: undefined })
    })

    it('accepts expires_in_days 1 and 365, and stores only the SHA-256 of each token', async () => {
      const one = await h.createToken(h.admin, 'read_only', 1)
      const year = await h.createToken(h.admin, 'read_write', 365)
      const dump = JSON.stringify(await h.dump())
      expect(dump).not.toContain(one)
      expect(dump).not.toContain(year)
      expect(dump).not.toContain(one.slice(12)) // nothing past the display prefix
      const rows = await h.server.runtime.knex(SERVICE_TABLES.tokens).select('token_hash', 'prefix')
      for (const row of rows) expect(row.token_hash).toMatch(/^[0-9a-f]{64}$/)
    })

    it('a token authenticates as its user, records last_used_at (at most once a minute) and expires', async () => {
      const token = await h.createToken(h.admin, 'read_write', 1)
      h.clock.advance(MINUTE)
      expect((await h.call('/api/projects', { as: bearer(token) })).status).toBe(200)
      const used = (await h.call('/api/tokens', { as: h.admin })).body[0]
      expect(used.last_used_at).toBe(new Date(T0 + MINUTE).toISOString())

      h.clock.advance(30_000)
      await h.call('/api/projects', { as: bearer(token) })
      expect((await h.call('/api/tokens', { as: h.admin })).body[0].last_used_at).toBe(used.last_used_at)
      h.clock.advance(30_000)
      await h.call('/api/projects', { as: bearer(token) })
      expect((await h.call('/api/tokens', { as: h.admin })).body[0].last_used_at).toBe(
        new Date(T0 + 2 * MINUTE).toISOString(),
      )

      h.clock.now = T0 + DAY - 1
      expect((await h.call('/api/projects', { as: bearer(token) })).status).toBe(200)
      h.clock.now = T0 + DAY
      const expired = await h.call('/api/projects', { as: bearer(token) })
      expect(expired).toMatchObject({
        status: 401,
        body: { code: 'unauthorized', error: 'this personal access token has expired' },
      })
    })

    it('a read_only token reads but is refused every state change with 403, creating tokens of either scope included', async () => {
      const ro = bearer(await h.createToken(h.admin, 'read_only'))
      expect((await h.call('/api/tokens', { as: ro })).status).toBe(200)
      const before = await h.dump()
      for (const scope of ['read_write', 'read_only']) {
        const res = await h.call('/api/tokens', { method: 'POST', as: ro, body: { name: 'escalate', scope } })
        expect(res.status).toBe(403)
        expect(res.body.code).toBe('forbidden')
        expect(res.body.error).toMatch(/read_only/)
      }
      expect((await h.call('/api/projects', { method: 'POST', as: ro, body: { name: 'X' } })).status).toBe(403)
      expect((await h.call(`/api/tokens/1`, { method: 'DELETE', as: ro })).status).toBe(403)
      expect(await h.dump()).toEqual(before)
    })

    it('a read_write token may create tokens of both scopes', async () => {
      const rw = bearer(await h.createToken(h.admin, 'read_write'))
      for (const scope of ['read_write', 'read_only']) {
        expect((await h.call('/api/tokens', { method: 'POST', as: rw, body: { name: 'n', scope } })).status).toBe(200)
      }
    })

    it("lists and deletes only the caller's own tokens: another user's token is a 404", async () => {
      await h.createUser({ email: 'eve@example.com', role: 'admin', password: 'password-123' })
      const eve = await h.login('eve@example.com', 'password-123')
      const evesToken = await h.createToken(eve, 'read_write')
      const evesId = (await h.call('/api/tokens', { as: eve })).body[0].id
      expect((await h.call('/api/tokens', { as: h.admin })).body).toEqual([])

      const before = await h.dump()
      const res = await h.call(`/api/tokens/${evesId}`, { method: 'DELETE', as: h.admin })
      expect(res).toMatchObject({ status: 404, body: { code: 'not_found' } })
      expect(await h.dump()).toEqual(before)
      for (const id of ['999', 'x'])
        expect((await h.call(`/api/tokens/${id}`, { method: 'DELETE', as: eve })).status).toBe(404)

      expect((await h.request(`/api/tokens/${evesId}`, { method: 'DELETE', as: eve })).status).toBe(204)
      expect((await h.call('/api/projects', { as: bearer(evesToken) })).status).toBe(401)
    })

    it('SDK keys act for no user: /api/tokens and /api/users answer 403', async () => {
      const key = bearer(h.defaultSdkKey)
      for (const [method, path, body] of [
        ['GET', '/api/tokens', undefined],
        ['POST', '/api/tokens', { name: 'x', scope: 'read_only' }],
        ['GET', '/api/users', undefined],
      ] as const) {
        const res = await h.call(path, { method, as: key, body })
        expect(res.status).toBe(403)
        expect(res.body.code).toBe('forbidden')
      }
    })
  })
})
