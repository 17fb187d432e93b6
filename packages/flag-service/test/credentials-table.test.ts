import { createServiceApp } from '@flagsync/flag-service'
import { DIALECTS } from '@flagsync/test-support/databases'
import { mountedRoutes } from '@flagsync/test-support/express-routes'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createProject, type Project, unique } from './flags/support.js'
import { type Caller, type Harness, headersFor, startHarness } from './harness.js'

/**
 * Every mounted route of the flag service × every kind of credential, with the
 * status class each must get: 401 (not authenticated), 403 (authenticated, not
 * allowed) or "admitted" (anything else below 500: a 2xx, or a 404/409/422 of
 * the route itself). A route added without a row here fails the first test.
 */

type Credential =
  | 'none'
  | 'wrong'
  | 'client key'
  | 'server key'
  | 'PAT read_only'
  | 'PAT read_write'
  | 'session + CSRF header'
  | 'session, no CSRF header'
type StatusClass = 401 | 403 | 'admitted'
/** The classes a request may get (one, but for what OFREP decides about callers that are not keys). */
type Expected = StatusClass | StatusClass[]

const CREDENTIALS: Credential[] = [
  'none',
  'wrong',
  'client key',
  'server key',
  'PAT read_only',
  'PAT read_write',
  'session + CSRF header',
  'session, no CSRF header',
]

interface Fixture {
  h: Harness
  project: Project
  memberId: number
}

interface RouteRow {
  /** Who the route is for: nobody needs credentials (`public`), any caller (default), users only, SDK keys only. */
  access?: 'public' | 'optional' | 'user' | 'sdk key'
  /** Where the request goes; may create what it deletes, so no request removes a credential of the table. */
  path(f: Fixture): string | Promise<string>
  body?: (f: Fixture) => unknown
}

const flag = { key: 'f0', is_enabled: true, description: 'd', flag_type: 'string', default_value: 'a' }
const p = (f: Fixture) => `/api/projects/${f.project.id}`
const e = (f: Fixture) => `/api/environments/${f.project.production}`
const asAdmin = async (f: Fixture, path: string, body: unknown) => {
  const res = await f.h.call(path, { method: 'POST', as: f.h.admin, body })
  if (res.status !== 200) throw new Error(`${path}: ${res.status} ${JSON.stringify(res.body)}`)
  return res.body
}

// A .invalid host never resolves: the test ping fails fast, reaching nothing.
const WEBHOOK = { url: 'https://hooks.invalid/flagsync', events: ['schedule.failed'] }
const webhookOf = async (f: Fixture) => (await asAdmin(f, `${p(f)}/webhooks`, WEBHOOK)).id as string

const ROUTES: Record<string, RouteRow> = {
  'GET /health': { access: 'public', path: () => '/health' },
  'GET /api/auth/workspace': { access: 'public', path: () => '/api/auth/workspace' },
  'POST /api/auth/login': {
    access: 'public',
    path: () => '/api/auth/login',
    body: () => ({ email: 'admin@example.com', password: 'correct horse battery' }),
  },
  'POST /api/auth/logout': { access: 'optional', path: () => '/api/auth/logout' },
  'GET /api/auth/me': { access: 'user', path: () => '/api/auth/me' },
  // A too-short new password: a 422 before the current one is checked, so no failed attempt locks the admin out.
  'POST /api/auth/password': {
    access: 'user',
    path: () => '/api/auth/password',
    body: () => ({ current_password: 'correct horse battery', new_password: 'short' }),
  },
  'GET /api/users': { access: 'user', path: () => '/api/users' },
  'POST /api/users': {
    access: 'user',
    path: () => '/api/users',
    body: () => ({ name: 'Eve', email: `${unique('eve')}@example.com`, role: 'viewer', password: 'password-123' }),
  },
  'DELETE /api/users/:param': {
    access: 'user',
    path: async (f) => `/api/users/${await f.h.createUser({ email: `${unique('gone')}@example.com`, role: 'viewer' })}`,
  },
  'PATCH /api/users/:param': {
    access: 'user',
    path: async (f) =>
      `/api/users/${await f.h.createUser({ email: `${unique('renamed')}@example.com`, role: 'viewer' })}`,
    body: () => ({ name: unique('Renamed') }),
  },
  'POST /api/users/:param/password': {
    access: 'user',
    path: async (f) =>
      `/api/users/${await f.h.createUser({ email: `${unique('reset')}@example.com`, role: 'viewer' })}/password`,
    body: () => ({ password: 'password-456' }),
  },
  'GET /api/users/audit': { access: 'user', path: () => '/api/users/audit' },
  'GET /api/tokens': { access: 'user', path: () => '/api/tokens' },
  'POST /api/tokens': { access: 'user', path: () => '/api/tokens', body: () => ({ name: 't', scope: 'read_only' }) },
  'DELETE /api/tokens/:param': {
    access: 'user',
    path: async (f) => `/api/tokens/${(await asAdmin(f, '/api/tokens', { name: 'gone', scope: 'read_only' })).id}`,
  },
  'GET /api/projects': { path: () => '/api/projects' },
  'POST /api/projects': { access: 'user', path: () => '/api/projects', body: () => ({ name: unique('Web') }) },
  'GET /api/projects/:param': { path: p },
  'PATCH /api/projects/:param': { path: p, body: () => ({ name: unique('Renamed') }) },
  'DELETE /api/projects/:param': {
    access: 'user',
    path: async (f) => `/api/projects/${(await createProject(f.h)).id}`,
  },
  'GET /api/projects/:param/members': { path: (f) => `${p(f)}/members` },
  'POST /api/projects/:param/members': {
    path: (f) => `${p(f)}/members`,
    body: (f) => ({ user_id: f.memberId, role: 'viewer' }),
  },
  'PATCH /api/projects/:param/members/:param': {
    path: (f) => `${p(f)}/members/${f.memberId}`,
    body: () => ({ role: 'editor' }),
  },
  'DELETE /api/projects/:param/members/:param': { path: (f) => `${p(f)}/members/${f.memberId}` },
  'GET /api/projects/:param/environments': { path: (f) => `${p(f)}/environments` },
  'PUT /api/projects/:param/environments/order': {
    path: (f) => `${p(f)}/environments/order`,
    body: (f) => ({ environment_ids: [f.project.production, f.project.staging, f.project.development] }),
  },
  'POST /api/projects/:param/environments': {
    path: (f) => `${p(f)}/environments`,
    body: () => ({ name: 'QA', slug: unique('qa'), color: '#abcdef' }),
  },
  'PATCH /api/projects/:param/environments/:param': {
    path: (f) => `${p(f)}/environments/${f.project.development}`,
    body: () => ({ name: 'Dev' }),
  },
  'DELETE /api/projects/:param/environments/:param': {
    path: async (f) => {
      const env = await asAdmin(f, `${p(f)}/environments`, { name: 'Gone', slug: unique('gone'), color: '#abcdef' })
      return `${p(f)}/environments/${env.id}`
    },
  },
  'POST /api/projects/:param/environments/:param/default': {
    path: (f) => `${p(f)}/environments/${f.project.production}/default`,
  },
  'POST /api/projects/:param/environments/:param/require-approval': {
    path: (f) => `${p(f)}/environments/${f.project.development}/require-approval`,
    body: () => ({ require_approval: false }),
  },
  'GET /api/projects/:param/keys': { path: (f) => `${p(f)}/keys` },
  'POST /api/projects/:param/keys': {
    path: (f) => `${p(f)}/keys`,
    body: (f) => ({ name: 'k', environment_id: f.project.production, kind: 'client' }),
  },
  'DELETE /api/projects/:param/keys/:param': {
    path: async (f) => {
      const key = await asAdmin(f, `${p(f)}/keys`, { name: 'gone', environment_id: f.project.production })
      return `${p(f)}/keys/${key.id}`
    },
  },
  'GET /api/environments/:param/flags': { path: (f) => `${e(f)}/flags` },
  'GET /api/environments/:param/flags/:param': { path: (f) => `${e(f)}/flags/f0` },
  'POST /api/environments/:param/flags': { path: (f) => `${e(f)}/flags`, body: () => flag },
  'PATCH /api/environments/:param/flags/:param': {
    path: (f) => `${e(f)}/flags/f0`,
    body: () => ({ description: unique('d') }),
  },
  'DELETE /api/environments/:param/flags/:param': { path: (f) => `${e(f)}/flags/missing` },
  'POST /api/environments/:param/flags/:param/promote': {
    path: (f) => `${e(f)}/flags/f0/promote`,
    body: (f) => ({ target_env_id: f.project.development }),
  },
  'GET /api/environments/:param/flags/:param/history': { path: (f) => `${e(f)}/flags/f0/history` },
  'GET /api/environments/:param/change-requests': { path: (f) => `${e(f)}/change-requests` },
  'GET /api/environments/:param/change-requests/:param': { path: (f) => `${e(f)}/change-requests/999` },
  'POST /api/environments/:param/change-requests/:param/approve': {
    path: (f) => `${e(f)}/change-requests/999/approve`,
  },
  'POST /api/environments/:param/change-requests/:param/reject': {
    path: (f) => `${e(f)}/change-requests/999/reject`,
    body: () => ({ reason: 'no' }),
  },
  'DELETE /api/environments/:param/change-requests/:param': { path: (f) => `${e(f)}/change-requests/999` },
  'POST /api/environments/:param/sync': {
    path: (f) => `${e(f)}/sync`,
    body: () => ({
      batchId: unique('b'),
      operations: [{ action: 'update', collection: 'flags', recordId: 'f0', changes: { description: 'y' } }],
    }),
  },
  'POST /api/environments/:param/evaluate': {
    path: (f) => `${e(f)}/evaluate`,
    body: () => ({ context: { user_id: 'u1' } }),
  },
  'GET /api/environments/:param/changes': { path: (f) => `${e(f)}/changes` },
  'GET /api/projects/:param/changes': { path: (f) => `${p(f)}/changes` },
  'PATCH /api/projects/:param/flags/:param/meta': {
    path: (f) => `${p(f)}/flags/f0/meta`,
    body: () => ({ tags: ['web'] }),
  },
  // A key no environment has: archiving and restoring are 404s, so no request takes f0 away from the others.
  'POST /api/projects/:param/flags/:param/archive': { path: (f) => `${p(f)}/flags/missing/archive` },
  'POST /api/projects/:param/flags/:param/restore': { path: (f) => `${p(f)}/flags/missing/restore` },
  'POST /api/projects/:param/flags': {
    path: (f) => `${p(f)}/flags`,
    body: (f) => ({ flag: { ...flag, key: unique('f') }, environment_ids: [f.project.production] }),
  },
  'GET /api/projects/:param/compare': {
    path: (f) => `${p(f)}/compare?from=${f.project.production}&to=${f.project.development}`,
  },
  'POST /api/projects/:param/promote': {
    path: (f) => `${p(f)}/promote`,
    body: (f) => ({
      from_env_id: f.project.production,
      to_env_id: f.project.development,
      flags: [{ key: 'f0', base_revision: null }],
    }),
  },
  'GET /api/projects/:param/segments': { path: (f) => `${p(f)}/segments` },
  'GET /api/projects/:param/segments/:param': { path: (f) => `${p(f)}/segments/missing` },
  'POST /api/projects/:param/segments': {
    path: (f) => `${p(f)}/segments`,
    body: () => ({
      key: unique('s'),
      name: 'S',
      rules: [{ attribute: 'country', operator: 'equals', values: ['de'] }],
    }),
  },
  'PATCH /api/projects/:param/segments/:param': {
    path: (f) => `${p(f)}/segments/missing`,
    body: () => ({ name: 'S' }),
  },
  'DELETE /api/projects/:param/segments/:param': { path: (f) => `${p(f)}/segments/missing` },
  'GET /stream': { path: (f) => `/stream?environment_id=${f.project.production}` },
  // Any caller may ask; a user is answered 400 (the snapshot is keyed by an SDK key), which is no auth refusal.
  'GET /flags/snapshot': { path: () => '/flags/snapshot' },
  'POST /api/environments/:param/impressions': {
    access: 'sdk key',
    path: (f) => `${e(f)}/impressions`,
    body: () => [{ flag_key: 'f0', user_id: 'u1', value: 'a' }],
  },
  'GET /api/environments/:param/impressions': { path: (f) => `${e(f)}/impressions` },
  'GET /api/environments/:param/impressions/stats': { path: (f) => `${e(f)}/impressions/stats` },
  'GET /api/environments/:param/flags/:param/schedules': { path: (f) => `${e(f)}/flags/f0/schedules` },
  'POST /api/environments/:param/flags/:param/schedules': {
    path: (f) => `${e(f)}/flags/f0/schedules`,
    body: (f) => ({ patch: { description: unique('d') }, run_at: new Date(f.h.clock.now + 60_000).toISOString() }),
  },
  'GET /api/environments/:param/schedules': { path: (f) => `${e(f)}/schedules` },
  'DELETE /api/environments/:param/schedules/:param': { path: (f) => `${e(f)}/schedules/999` },
  'POST /api/environments/:param/schedules/:param/approve': { path: (f) => `${e(f)}/schedules/999/approve` },
  'GET /api/projects/:param/webhooks': { path: (f) => `${p(f)}/webhooks` },
  'POST /api/projects/:param/webhooks': { path: (f) => `${p(f)}/webhooks`, body: () => WEBHOOK },
  'GET /api/projects/:param/webhooks/:param': { path: async (f) => `${p(f)}/webhooks/${await webhookOf(f)}` },
  'PATCH /api/projects/:param/webhooks/:param': {
    path: async (f) => `${p(f)}/webhooks/${await webhookOf(f)}`,
    body: () => ({ description: unique('d') }),
  },
  'DELETE /api/projects/:param/webhooks/:param': { path: async (f) => `${p(f)}/webhooks/${await webhookOf(f)}` },
  'GET /api/projects/:param/webhooks/:param/deliveries': {
    path: async (f) => `${p(f)}/webhooks/${await webhookOf(f)}/deliveries`,
  },
  'POST /api/projects/:param/webhooks/:param/deliveries/:param/redeliver': {
    path: async (f) => `${p(f)}/webhooks/${await webhookOf(f)}/deliveries/msg_${'0'.repeat(32)}/redeliver`,
  },
  'POST /api/projects/:param/webhooks/:param/test': {
    path: async (f) => `${p(f)}/webhooks/${await webhookOf(f)}/test`,
  },
}

/** OFREP routes: any route under /ofrep/v1/, with a body its POSTs accept. */
const OFREP_ROUTE = /^(GET|POST) \/ofrep\/v1\//
const ofrepRow = (route: string): RouteRow => ({
  path: () => route.slice(route.indexOf(' ') + 1).replace(/:param/g, 'f0'),
  body: route.startsWith('POST') ? () => ({ context: { targetingKey: 'u1' } }) : undefined,
})
const rowOf = (route: string): RouteRow | undefined =>
  ROUTES[route] ?? (OFREP_ROUTE.test(route) ? ofrepRow(route) : undefined)

/** Where a client key is admitted: OFREP and its environment's impression ingest (`clientKeyMay`). */
const CLIENT_KEY_ROUTES = (route: string) =>
  OFREP_ROUTE.test(route) || route === 'POST /api/environments/:param/impressions'

/** The status class the policy gives a route and a credential. */
function expectedFor(route: string, row: RouteRow, credential: Credential): Expected {
  const write = !route.startsWith('GET ')
  if (row.access === 'public') return 'admitted'
  if (credential === 'none') {
    if (route === 'GET /ofrep/v1/configuration') return [401, 'admitted'] // capabilities only, no flag
    return row.access === 'optional' ? 'admitted' : 401
  }
  if (credential === 'wrong') return 401
  if (credential === 'client key') return CLIENT_KEY_ROUTES(route) ? 'admitted' : 403
  if (credential === 'server key') {
    if (route === 'GET /api/auth/me') return 401 // "no valid session": a key is nobody's session
    return row.access === 'user' ? 403 : 'admitted'
  }
  if (route === 'POST /api/auth/password' && credential.startsWith('PAT')) return 403 // a session's own change
  const refusedWrite = credential === 'PAT read_only' || credential === 'session, no CSRF header'
  if (write && refusedWrite) return 403
  if (OFREP_ROUTE.test(route)) return ['admitted', 403] // OFREP is for keys; whether a user may call it is its own
  return row.access === 'sdk key' ? 403 : 'admitted'
}

const classOf = (status: number): StatusClass | number =>
  status === 401 || status === 403 ? status : status < 500 ? 'admitted' : status

describe.each(DIALECTS)('every route × every credential of the flag service on %s', (dialect) => {
  let f: Fixture
  let secrets: { client: string; server: string; readOnly: string; readWrite: string; session: Caller }
  const callerFor = async (credential: Credential, route: string): Promise<Caller> => {
    // Logging out ends the session it is sent with: that row gets a session of its own.
    const session =
      route === 'POST /api/auth/logout'
        ? await f.h.login('admin@example.com', 'correct horse battery')
        : secrets.session
    const bearer = (secret: string): Caller => ({ kind: 'bearer', secret })
    const callers: Record<Credential, Caller> = {
      none: { kind: 'anonymous' },
      wrong: bearer(`sk_live_${'x'.repeat(43)}`),
      'client key': bearer(secrets.client),
      'server key': bearer(secrets.server),
      'PAT read_only': bearer(secrets.readOnly),
      'PAT read_write': bearer(secrets.readWrite),
      'session + CSRF header': { ...session, csrf: true } as Caller,
      'session, no CSRF header': { ...session, csrf: false } as Caller,
    }
    return callers[credential]
  }

  beforeAll(async () => {
    const h = await startHarness(dialect)
    const project = await createProject(h)
    const memberId = await h.createUser({ email: 'member@example.com', role: 'editor' })
    f = { h, project, memberId }
    await asAdmin(f, `${e(f)}/flags`, flag)
    const client = await asAdmin(f, `${p(f)}/keys`, { name: 'web', environment_id: project.production, kind: 'client' })
    secrets = {
      client: client.key,
      server: project.sdkKey,
      readOnly: await h.createToken(h.admin, 'read_only'),
      readWrite: await h.createToken(h.admin, 'read_write'),
      session: h.admin,
    }
  })
  afterAll(async () => {
    await f?.h.dispose()
  })

  it('every mounted route has a row in the table', () => {
    const mounted = [...mountedRoutes(createServiceApp(f.h.server.runtime))]
    expect(mounted.filter((route) => !rowOf(route)).sort(), 'mounted without an expectation').toEqual([])
    expect(
      Object.keys(ROUTES).filter((route) => !mounted.includes(route)),
      'rows for no route',
    ).toEqual([])
  })

  it('each route answers each credential as the policy says', { timeout: 180_000 }, async () => {
    const mismatches: string[] = []
    const mounted = [...mountedRoutes(createServiceApp(f.h.server.runtime))].sort()
    for (const route of mounted) {
      const row = rowOf(route)
      if (!row) continue
      for (const credential of CREDENTIALS) {
        const want = expectedFor(route, row, credential)
        const status = await send(f, route, row, await callerFor(credential, route))
        const got = classOf(status.status)
        const ok = Array.isArray(want) ? want.some((w) => w === got) : got === want
        if (!ok) mismatches.push(`${route} as ${credential}: want ${String(want)}, got ${status.status} ${status.text}`)
      }
    }
    expect(mismatches).toEqual([])
  })
})

/** One request; a stream that opened is read no further. */
async function send(f: Fixture, route: string, row: RouteRow, caller: Caller) {
  const method = route.slice(0, route.indexOf(' '))
  const body = row.body?.(f)
  const headers: Record<string, string> = { ...headersFor(caller) }
  if (body !== undefined) headers['Content-Type'] = 'application/json'
  const controller = new AbortController()
  const res = await fetch(`${f.h.url}${await row.path(f)}`, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: controller.signal,
  })
  const text = res.headers.get('content-type')?.startsWith('text/event-stream') ? '' : await res.text()
  controller.abort()
  return { status: res.status, text: text.slice(0, 200) }
}
