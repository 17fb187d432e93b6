import { DIALECTS } from '@flagsync/test-support/databases'
import { afterEach, describe, expect, it } from 'vitest'
import { SERVICE_TABLES } from '../src/tables.js'
import {
  ADMIN_EMAIL,
  ADMIN_PASSWORD,
  anonymous,
  bearer,
  type Caller,
  cookieOf,
  DAY,
  type Harness,
  MINUTE,
  startHarness,
  WORKSPACE_NAME,
} from './harness.js'

describe.each(DIALECTS)('auth on %s', (dialect) => {
  const harnesses: Harness[] = []
  afterEach(async () => {
    for (const h of harnesses.splice(0)) await h.dispose()
  })
  async function start(options: Parameters<typeof startHarness>[1] = {}) {
    const h = await startHarness(dialect, options)
    harnesses.push(h)
    return h
  }
  const attempt = (h: Harness, password: string, email = ADMIN_EMAIL) =>
    h.call('/api/auth/login', { method: 'POST', body: { email, password } })

  describe('GET /health', () => {
    it('is public and answers 200 OK as plain text', async () => {
      const h = await start()
      const res = await h.request('/health')
      expect(res.status).toBe(200)
      expect(res.headers.get('content-type')).toMatch(/^text\/plain/)
      expect(await res.text()).toBe('OK')
    })
  })

  describe('setup and GET /api/auth/workspace', () => {
    it('creates the workspace, its admin and the Default project on an empty database', async () => {
      const h = await start()
      expect(h.server.setup).toMatchObject({
        status: 'created',
        workspaceName: WORKSPACE_NAME,
        adminEmail: ADMIN_EMAIL,
      })
      const ws = await h.call('/api/auth/workspace')
      expect(ws).toMatchObject({ status: 200, body: { workspace_name: WORKSPACE_NAME, is_setup_complete: true } })
      const projects = await h.call('/api/projects', { as: h.admin })
      expect(projects.body).toEqual([
        expect.objectContaining({ id: h.defaultProjectId, name: 'Default', slug: 'default', environment_count: 3 }),
      ])
      // The key setup printed works.
      expect((await h.call('/api/projects', { as: bearer(h.defaultSdkKey) })).status).toBe(200)
    })

    it('without the setup variables keeps serving, reports the workspace as not set up and lets nobody in', async () => {
      const h = await start({ setup: false })
      expect(h.server.setup).toEqual({ status: 'missing' })
      expect(await h.call('/api/auth/workspace')).toMatchObject({
        status: 200,
        body: { workspace_name: '', is_setup_complete: false },
      })
      const login = await attempt(h, ADMIN_PASSWORD)
      expect(login.status).toBe(401)
      expect((await h.call('/api/projects')).status).toBe(401)
      expect(await h.dump()).toMatchObject({ [SERVICE_TABLES.users]: [], [SERVICE_TABLES.projects]: [] })
    })

    it('on a database that is set up ignores the setup variables (restart keeps the data)', async () => {
      const first = await start()
      await first.stop()
      const again = await start({
        databaseUrl: first.databaseUrl,
        env: { ADMIN_EMAIL: 'other@example.com', ADMIN_PASSWORD: 'another password', WORKSPACE_NAME: 'Other' },
      })
      expect(again.server.setup).toEqual({ status: 'exists', workspaceName: WORKSPACE_NAME })
      expect((await again.call('/api/users', { as: again.admin })).body.map((u: { email: string }) => u.email)).toEqual(
        [ADMIN_EMAIL],
      )
      expect((await attempt(again, 'another password', 'other@example.com')).status).toBe(401)
    })
  })

  describe('POST /api/auth/login', () => {
    it('answers the login response and sets the session cookie (HttpOnly, SameSite=Strict, 7 days, Path=/)', async () => {
      const h = await start()
      const res = await h.request('/api/auth/login', {
        method: 'POST',
        body: { email: ' Admin@Example.COM ', password: ADMIN_PASSWORD },
      })
      expect(res.status).toBe(200)
      expect(await res.json()).toEqual({
        id: h.adminId,
        email: ADMIN_EMAIL,
        name: 'Ada Admin',
        role: 'admin',
        workspace_name: WORKSPACE_NAME,
        is_setup_complete: true,
      })
      const cookie = res.headers.get('set-cookie') ?? ''
      expect(cookie).toMatch(/^flagsync_session=[A-Za-z0-9_-]{43}; /)
      const attributes = cookie.split('; ').slice(1)
      expect(attributes).toEqual(expect.arrayContaining(['Path=/', 'Max-Age=604800', 'HttpOnly', 'SameSite=Strict']))
      expect(attributes).not.toContain('Secure') // auto: plain HTTP here
      expect(res.headers.get('cache-control')).toBe('no-store')
    })

    it('marks the cookie Secure when COOKIE_SECURE=true', async () => {
      const h = await start({ env: { COOKIE_SECURE: 'true' } })
      const res = await h.request('/api/auth/login', {
        method: 'POST',
        body: { email: ADMIN_EMAIL, password: ADMIN_PASSWORD },
      })
      expect(res.headers.get('set-cookie')).toMatch(/; Secure$/)
    })

    it('answers 401 with attempts_remaining for a wrong password and for an unknown email alike', async () => {
      const h = await start()
      const wrong = await attempt(h, 'wrong password')
      expect(wrong.status).toBe(401)
      expect(wrong.body).toEqual({ error: 'wrong email or password', code: 'unauthorized', attempts_remaining: 4 })
      expect(wrong.res.headers.get('set-cookie')).toBeNull()
      const unknown = await attempt(h, 'whatever', 'nobody@example.com')
      expect(unknown.body).toEqual({ error: 'wrong email or password', code: 'unauthorized', attempts_remaining: 4 })
    })

    it('locks after 5 failures within 10 minutes: 429 with retry_after_seconds 900 counting down, then unlocks after 15 minutes', async () => {
      const h = await start()
      const remaining: number[] = []
      for (let i = 0; i < 4; i++) {
        const res = await attempt(h, `wrong ${i}`)
        expect(res.status).toBe(401)
        remaining.push(res.body.attempts_remaining)
        h.clock.advance(MINUTE)
      }
      expect(remaining).toEqual([4, 3, 2, 1])
      const fifth = await attempt(h, 'wrong 4')
      expect(fifth.status).toBe(429)
      expect(fifth.body).toEqual({
        error: 'too many failed logins: try again in 900 seconds',
        code: 'rate_limited',
        retry_after_seconds: 900,
      })
      expect(fifth.res.headers.get('retry-after')).toBe('900')

      // Locked: even the right password is refused, and the countdown continues.
      h.clock.advance(MINUTE)
      const locked = await attempt(h, ADMIN_PASSWORD)
      expect(locked.status).toBe(429)
      expect(locked.body.retry_after_seconds).toBe(840)
      expect(locked.res.headers.get('retry-after')).toBe('840')
      h.clock.advance(13 * MINUTE + 59_000)
      expect((await attempt(h, ADMIN_PASSWORD)).body.retry_after_seconds).toBe(1)

      // Another account is not affected.
      const other = await attempt(h, 'x', 'someone@example.com')
      expect(other.status).toBe(401)

      h.clock.advance(1000)
      const after = await attempt(h, ADMIN_PASSWORD)
      expect(after.status).toBe(200)
      // A successful login clears the count.
      expect((await attempt(h, 'wrong again')).body.attempts_remaining).toBe(4)
    })

    it('does not count failures older than 10 minutes', async () => {
      const h = await start()
      for (let i = 0; i < 4; i++) await attempt(h, 'wrong')
      h.clock.advance(10 * MINUTE)
      const res = await attempt(h, 'wrong')
      expect(res.status).toBe(401)
      expect(res.body.attempts_remaining).toBe(4)
      expect((await attempt(h, ADMIN_PASSWORD)).status).toBe(200)
    })

    it('locks an unknown email too, so lockouts do not reveal which accounts exist', async () => {
      const h = await start()
      for (let i = 0; i < 4; i++) expect((await attempt(h, 'x', 'ghost@example.com')).status).toBe(401)
      expect((await attempt(h, 'x', 'ghost@example.com')).status).toBe(429)
    })

    it('forgets failures once they can no longer matter (25 minutes), for every email', async () => {
      const h = await start()
      for (const email of ['a@example.com', 'b@example.com', 'c@example.com']) await attempt(h, 'x', email)
      const failures = () => h.server.runtime.knex(SERVICE_TABLES.loginFailures).pluck('email')
      expect(await failures()).toHaveLength(3)
      h.clock.advance(25 * MINUTE)
      await attempt(h, 'x', 'd@example.com')
      expect(await failures()).toEqual(['d@example.com'])
    })
  })

  describe('GET /api/auth/me and POST /api/auth/logout', () => {
    it('me answers the current user for a session and for a personal access token', async () => {
      const h = await start()
      const me = await h.call('/api/auth/me', { as: h.admin })
      expect(me).toMatchObject({
        status: 200,
        body: { email: ADMIN_EMAIL, role: 'admin', workspace_name: WORKSPACE_NAME },
      })
      const token = await h.createToken(h.admin, 'read_only')
      expect((await h.call('/api/auth/me', { as: bearer(token) })).body).toEqual(me.body)
    })

    it.each<[string, (h: Harness) => Caller]>([
      ['no credentials', () => anonymous],
      ['an unknown session cookie', () => ({ kind: 'session', cookie: 'flagsync_session=forged' })],
      ['a malformed cookie', () => ({ kind: 'session', cookie: 'flagsync_session=%%%' })],
      ['an SDK key (no user)', (h) => bearer(h.defaultSdkKey)],
    ])('me answers 401 with %s', async (_name, caller) => {
      const h = await start()
      const res = await h.call('/api/auth/me', { as: caller(h) })
      expect(res.status).toBe(401)
      expect(res.body).toMatchObject({ code: 'unauthorized', error: expect.any(String) })
    })

    it('the session expires after 7 days', async () => {
      const h = await start()
      h.clock.advance(7 * DAY - 1)
      expect((await h.call('/api/auth/me', { as: h.admin })).status).toBe(200)
      h.clock.advance(1)
      expect((await h.call('/api/auth/me', { as: h.admin })).status).toBe(401)
    })

    it('logout answers 204, clears the cookie and ends the session on the server', async () => {
      const h = await start()
      const res = await h.request('/api/auth/logout', { method: 'POST', as: h.admin })
      expect(res.status).toBe(204)
      expect(res.headers.get('set-cookie')).toBe('flagsync_session=; Path=/; Max-Age=0; HttpOnly; SameSite=Strict')
      expect((await h.call('/api/auth/me', { as: h.admin })).status).toBe(401)
      expect((await h.server.runtime.knex(SERVICE_TABLES.sessions).select('*')).length).toBe(0)
      // Without a session it still answers 204.
      expect((await h.request('/api/auth/logout', { method: 'POST' })).status).toBe(204)
    })

    it('sessions of one login survive the logout of another', async () => {
      const h = await start()
      const second = await h.login(ADMIN_EMAIL, ADMIN_PASSWORD)
      await h.request('/api/auth/logout', { method: 'POST', as: second })
      expect((await h.call('/api/auth/me', { as: h.admin })).status).toBe(200)
    })
  })

  describe('CSRF: X-Service-Request: true on cookie-authenticated state changes', () => {
    it('refuses a cookie POST, PATCH or DELETE without the header (403) and changes nothing', async () => {
      const h = await start()
      const noHeader: Caller = { ...(h.admin as Extract<Caller, { kind: 'session' }>), csrf: false }
      const before = await h.dump()
      const attempts = [
        h.call('/api/projects', { method: 'POST', as: noHeader, body: { name: 'Web' } }),
        h.call(`/api/projects/${h.defaultProjectId}`, { method: 'PATCH', as: noHeader, body: { name: 'Renamed' } }),
        h.call('/api/users', {
          method: 'POST',
          as: noHeader,
          body: { name: 'x', email: 'x@example.com', role: 'viewer', password: 'password-1' },
        }),
        h.call('/api/auth/logout', { method: 'POST', as: noHeader }),
        h.call('/api/projects', {
          method: 'POST',
          as: noHeader,
          headers: { 'X-Service-Request': 'yes' },
          body: { name: 'Web' },
        }),
      ]
      for (const res of await Promise.all(attempts)) {
        expect(res.status).toBe(403)
        expect(res.body).toEqual({
          error: 'state-changing requests with a session need the header X-Service-Request: true',
          code: 'forbidden',
        })
      }
      expect(await h.dump()).toEqual(before)
      // Reads need no header.
      expect((await h.call('/api/projects', { as: noHeader })).status).toBe(200)
    })

    it('accepts the cookie POST with the header, and exempts Bearer credentials', async () => {
      const h = await start()
      expect((await h.call('/api/projects', { method: 'POST', as: h.admin, body: { name: 'Web' } })).status).toBe(200)
      const token = await h.createToken(h.admin, 'read_write')
      expect((await h.call('/api/projects', { method: 'POST', as: bearer(token), body: { name: 'Api' } })).status).toBe(
        200,
      )
    })
  })

  describe('Bearer credentials', () => {
    it.each([
      ['an unknown personal access token', 'Bearer pat_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA'],
      ['an unknown SDK key', 'Bearer sk_live_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA'],
      ['a secret of no known kind', 'Bearer abc123'],
      ['another scheme', 'Basic YWRtaW46cGFzcw=='],
      ['an empty Bearer', 'Bearer '],
    ])('answers 401 for %s, with WWW-Authenticate, even when a valid cookie is also sent', async (_name, header) => {
      const h = await start()
      const cookie = (h.admin as Extract<Caller, { kind: 'session' }>).cookie
      const res = await h.call('/api/projects', { headers: { Authorization: header, Cookie: cookie } })
      expect(res.status).toBe(401)
      expect(res.body).toMatchObject({ code: 'unauthorized' })
      expect(res.res.headers.get('www-authenticate')).toBe('Bearer')
    })

    it('answers 401 on protected routes without credentials, JSON 404 for unknown routes, 405 for a wrong method', async () => {
      const h = await start()
      for (const path of ['/api/projects', '/api/users', '/api/tokens', `/api/projects/${h.defaultProjectId}/keys`]) {
        expect((await h.call(path)).status).toBe(401)
      }
      const missing = await h.call('/api/nope', { as: h.admin })
      expect(missing).toMatchObject({ status: 404, body: { code: 'not_found', error: 'no route for GET /api/nope' } })
      const wrong = await h.call('/api/auth/login')
      expect(wrong.status).toBe(405)
      expect(wrong.res.headers.get('allow')).toBe('POST')
      expect(wrong.body).toMatchObject({ code: 'method_not_allowed' })
      const put = await h.call('/api/users', { method: 'PUT', as: h.admin, body: {} })
      expect(put.status).toBe(405)
      expect(put.res.headers.get('allow')).toBe('GET, POST')
    })

    it('answers 400 for malformed JSON, 415 for a non-JSON body and 413 over the body limit', async () => {
      const h = await start({ env: { BODY_LIMIT: '1kb' } })
      const malformed = await h.call('/api/auth/login', { method: 'POST', body: '{"email":' })
      expect(malformed).toMatchObject({ status: 400, body: { code: 'bad_request', error: 'malformed JSON body' } })
      const text = await h.call('/api/auth/login', {
        method: 'POST',
        body: 'email=a',
        headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      })
      expect(text).toMatchObject({ status: 415, body: { code: 'unsupported_media_type' } })
      const big = await h.call('/api/projects', { method: 'POST', as: h.admin, body: { name: 'x'.repeat(2000) } })
      expect(big).toMatchObject({ status: 413, body: { code: 'payload_too_large' } })
    })
  })

  describe('passwords at rest', () => {
    it('stores only scrypt hashes and never returns them', async () => {
      const h = await start()
      await h.createUser({ email: 'eve@example.com', role: 'editor', password: 'eves password' })
      const dump = JSON.stringify(await h.dump())
      expect(dump).not.toContain(ADMIN_PASSWORD)
      expect(dump).not.toContain('eves password')
      const hashes = await h.server.runtime.knex(SERVICE_TABLES.users).pluck('password_hash')
      for (const hash of hashes) expect(hash).toMatch(/^scrypt\$16384\$8\$1\$/)
      const users = JSON.stringify((await h.call('/api/users', { as: h.admin })).body)
      expect(users).not.toContain('scrypt')
      expect(users).not.toContain('password')
    })
  })

  it('a copied session cookie stops working after logout', async () => {
    const h = await start()
    const res = await h.request('/api/auth/login', {
      method: 'POST',
      body: { email: ADMIN_EMAIL, password: ADMIN_PASSWORD },
    })
    const copy: Caller = { kind: 'session', cookie: cookieOf(res) }
    await h.request('/api/auth/logout', { method: 'POST', as: copy })
    expect((await h.call('/api/projects', { as: copy })).status).toBe(401)
  })
})
