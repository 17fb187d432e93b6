import { DIALECTS } from '@flagsync/test-support/databases'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type Harness, startHarness } from './harness.js'

interface Target {
  projectId: string
  environmentId: string
  memberId: number
}

interface BodyCase {
  route: string
  method: 'POST' | 'PATCH'
  path(t: Target): string
  /** A JSON value, or a raw string sent as is. */
  body: unknown
  /** The field the 422 must name (`(root)` for the body itself). */
  field: string
}

const long = (n: number) => 'x'.repeat(n)
const NOT_OBJECTS: Array<[string, unknown]> = [
  ['an array', []],
  ['a string', '"text"'],
  ['null', 'null'],
  ['a number', '42'],
]

/** Every body of the service's routes, wrong in every way the schemas know (types, limits, unknown or missing fields). */
const CASES: BodyCase[] = [
  ...((): BodyCase[] => {
    const r = (body: unknown, field: string): BodyCase => ({
      route: 'POST /api/auth/login',
      method: 'POST',
      path: () => '/api/auth/login',
      body,
      field,
    })
    return [
      r({}, 'email'),
      r({ email: 1, password: 'x' }, 'email'),
      r({ email: 'a@example.com' }, 'password'),
      r({ email: 'a@example.com', password: 5 }, 'password'),
      r({ email: long(255), password: 'x' }, 'email'),
      r({ email: 'a@example.com', password: long(1025) }, 'password'),
      r({ email: 'a@example.com', password: 'x', remember: true }, 'remember'),
      // PostgreSQL cannot hash a NUL into the lockout's advisory lock key: was a 500 there.
      r({ email: 'x\u0000@example.com', password: 'x' }, 'email'),
      ...NOT_OBJECTS.map(([, body]) => r(body, '(root)')),
    ]
  })(),
  ...((): BodyCase[] => {
    const ok = { name: 'Eve', email: 'eve@example.com', role: 'viewer', password: 'password-123' }
    const r = (body: unknown, field: string): BodyCase => ({
      route: 'POST /api/users',
      method: 'POST',
      path: () => '/api/users',
      body,
      field,
    })
    return [
      r({ ...ok, name: '' }, 'name'),
      r({ ...ok, name: '   ' }, 'name'),
      r({ ...ok, name: long(101) }, 'name'),
      r({ ...ok, name: 5 }, 'name'),
      r({ ...ok, name: 'E\u0000ve' }, 'name'),
      r({ ...ok, name: 'E\nve' }, 'name'),
      r({ ...ok, name: 'E\ud800ve' }, 'name'),
      r({ ...ok, email: 'not-an-email' }, 'email'),
      r({ ...ok, email: `${long(250)}@x.io` }, 'email'),
      r({ ...ok, role: 'owner' }, 'role'),
      r({ ...ok, role: null }, 'role'),
      r({ ...ok, password: '1234567' }, 'password'),
      r({ ...ok, password: long(1025) }, 'password'),
      r({ ...ok, password: 12345678 }, 'password'),
      r({ name: 'Eve', email: 'eve@example.com', role: 'viewer' }, 'password'),
      r({ ...ok, is_admin: true }, 'is_admin'),
      ...NOT_OBJECTS.map(([, body]) => r(body, '(root)')),
    ]
  })(),
  ...((): BodyCase[] => {
    const r = (body: unknown, field: string): BodyCase => ({
      route: 'POST /api/tokens',
      method: 'POST',
      path: () => '/api/tokens',
      body,
      field,
    })
    return [
      r({ scope: 'read_only' }, 'name'),
      r({ name: long(101), scope: 'read_only' }, 'name'),
      // Issue C1: a 500 on PostgreSQL (text cannot hold NUL), stored on SQLite.
      r({ name: 't\u0000', scope: 'read_only' }, 'name'),
      r({ name: 'a\u0007b', scope: 'read_only' }, 'name'),
      r({ name: 't' }, 'scope'),
      r({ name: 't', scope: 'admin' }, 'scope'),
      r({ name: 't', scope: 'read_only', expires_in_days: 0 }, 'expires_in_days'),
      r({ name: 't', scope: 'read_only', expires_in_days: 366 }, 'expires_in_days'),
      r({ name: 't', scope: 'read_only', expires_in_days: 1.5 }, 'expires_in_days'),
      r({ name: 't', scope: 'read_only', expires_in_days: '30' }, 'expires_in_days'),
      r({ name: 't', scope: 'read_only', user_id: 2 }, 'user_id'),
      ...NOT_OBJECTS.map(([, body]) => r(body, '(root)')),
    ]
  })(),
  ...(['POST', 'PATCH'] as const).flatMap((method): BodyCase[] => {
    const r = (body: unknown, field: string): BodyCase => ({
      route: `${method} /api/projects${method === 'PATCH' ? '/:id' : ''}`,
      method,
      path: (t) => (method === 'POST' ? '/api/projects' : `/api/projects/${t.projectId}`),
      body,
      field,
    })
    return [
      r({}, 'name'),
      r({ name: '' }, 'name'),
      r({ name: ' \t ' }, 'name'),
      r({ name: long(101) }, 'name'),
      r({ name: 5 }, 'name'),
      r({ name: '!!!' }, 'name'),
      r({ name: 'We\u0000b' }, 'name'),
      r({ name: 'Web', slug: 'web' }, 'slug'),
      r({ name: 'Web', color: '#fff' }, 'color'),
      ...NOT_OBJECTS.map(([, body]) => r(body, '(root)')),
    ]
  }),
  ...((): BodyCase[] => {
    const r = (body: unknown, field: string): BodyCase => ({
      route: 'POST …/members',
      method: 'POST',
      path: (t) => `/api/projects/${t.projectId}/members`,
      body,
      field,
    })
    return [
      r({ role: 'viewer' }, 'user_id'),
      r({ user_id: '2', role: 'viewer' }, 'user_id'),
      r({ user_id: 1.5, role: 'viewer' }, 'user_id'),
      r({ user_id: 0, role: 'viewer' }, 'user_id'),
      r({ user_id: 2 ** 31, role: 'viewer' }, 'user_id'),
      r({ user_id: 1 }, 'role'),
      r({ user_id: 1, role: 'owner' }, 'role'),
      r({ user_id: 1, role: 'viewer', note: 'x' }, 'note'),
      ...NOT_OBJECTS.map(([, body]) => r(body, '(root)')),
    ]
  })(),
  ...((): BodyCase[] => {
    const r = (body: unknown, field: string): BodyCase => ({
      route: 'PATCH …/members/:user_id',
      method: 'PATCH',
      path: (t) => `/api/projects/${t.projectId}/members/${t.memberId}`,
      body,
      field,
    })
    return [
      r({}, 'role'),
      r({ role: 5 }, 'role'),
      r({ role: 'root' }, 'role'),
      r({ role: 'admin', user_id: 3 }, 'user_id'),
      ...NOT_OBJECTS.map(([, body]) => r(body, '(root)')),
    ]
  })(),
  ...((): BodyCase[] => {
    const r = (body: unknown, field: string): BodyCase => ({
      route: 'POST …/environments',
      method: 'POST',
      path: (t) => `/api/projects/${t.projectId}/environments`,
      body,
      field,
    })
    return [
      r({ slug: 'qa' }, 'name'),
      r({ name: long(101), slug: 'qa' }, 'name'),
      r({ name: 7, slug: 'qa' }, 'name'),
      r({ name: 'Q\u0000A', slug: 'qa' }, 'name'),
      // No slug: derived from the name, so a name with nothing to derive it from is the error.
      r({ name: '★★' }, 'name'),
      r({ name: 'QA', slug: '' }, 'slug'),
      r({ name: 'QA', slug: long(65) }, 'slug'),
      r({ name: 'QA', slug: 'Has-Caps' }, 'slug'),
      r({ name: 'QA', slug: 'under_score' }, 'slug'),
      r({ name: 'QA', slug: 'spa ce' }, 'slug'),
      r({ name: 'QA', slug: 5 }, 'slug'),
      r({ name: 'QA', slug: 'qa', color: 'blue' }, 'color'),
      r({ name: 'QA', slug: 'qa', color: '#12345' }, 'color'),
      r({ name: 'QA', slug: 'qa', color: '#gggggg' }, 'color'),
      r({ name: 'QA', slug: 'qa', is_default: true }, 'is_default'),
      ...NOT_OBJECTS.map(([, body]) => r(body, '(root)')),
    ]
  })(),
  ...((): BodyCase[] => {
    const r = (body: unknown, field: string): BodyCase => ({
      route: 'PATCH …/environments/:env_id',
      method: 'PATCH',
      path: (t) => `/api/projects/${t.projectId}/environments/${t.environmentId}`,
      body,
      field,
    })
    return [
      r({}, '(root)'),
      r({ name: '' }, 'name'),
      r({ name: long(101) }, 'name'),
      // Issue C1: a 500 on PostgreSQL (text cannot hold NUL), stored on SQLite.
      r({ name: 'a\u0000b' }, 'name'),
      r({ name: 'a\u001fb' }, 'name'),
      r({ color: '#zzz' }, 'color'),
      r({ color: 0x6366f1 }, 'color'),
      r({ name: 'x', slug: 'new-slug' }, 'slug'),
      r({ name: 'x', is_default: true }, 'is_default'),
      r({ name: 'x', require_approval: true }, 'require_approval'),
      r({ name: 'x', foo: 1 }, 'foo'),
      ...NOT_OBJECTS.map(([, body]) => r(body, '(root)')),
    ]
  })(),
  ...((): BodyCase[] => {
    const r = (body: unknown, field: string): BodyCase => ({
      route: 'POST …/environments/:env_id/require-approval',
      method: 'POST',
      path: (t) => `/api/projects/${t.projectId}/environments/${t.environmentId}/require-approval`,
      body,
      field,
    })
    return [
      r({}, 'require_approval'),
      r({ require_approval: 'yes' }, 'require_approval'),
      r({ require_approval: 1 }, 'require_approval'),
      r({ require_approval: null }, 'require_approval'),
      r({ require_approval: true, reason: 'x' }, 'reason'),
      ...NOT_OBJECTS.map(([, body]) => r(body, '(root)')),
    ]
  })(),
  ...((): BodyCase[] => {
    const r = (body: (t: Target) => unknown, field: string): BodyCase => ({
      route: 'POST …/keys',
      method: 'POST',
      path: (t) => `/api/projects/${t.projectId}/keys`,
      body,
      field,
    })
    return [
      r((t) => ({ environment_id: t.environmentId }), 'name'),
      r((t) => ({ name: '', environment_id: t.environmentId }), 'name'),
      r((t) => ({ name: long(101), environment_id: t.environmentId }), 'name'),
      r((t) => ({ name: 'k\u0000', environment_id: t.environmentId }), 'name'),
      r(() => ({ name: 'k' }), 'environment_id'),
      r(() => ({ name: 'k', environment_id: 5 }), 'environment_id'),
      r(() => ({ name: 'k', environment_id: long(37) }), 'environment_id'),
      r((t) => ({ name: 'k', environment_id: t.environmentId, key: 'sk_live_mine' }), 'key'),
      ...NOT_OBJECTS.map(([, body]) => r(() => body, '(root)')),
    ]
  })(),
  // The base of a conflict-checked PATCH, and the force of an approval.
  ...((): BodyCase[] => {
    const r = (body: unknown, field: string): BodyCase => ({
      route: 'PATCH …/flags/:key (base_revision)',
      method: 'PATCH',
      path: (t) => `/api/environments/${t.environmentId}/flags/any`,
      body,
      field,
    })
    return [
      r({ is_enabled: true, base_revision: -1 }, 'base_revision'),
      r({ is_enabled: true, base_revision: 1.5 }, 'base_revision'),
      r({ is_enabled: true, base_revision: '7' }, 'base_revision'),
      r({ is_enabled: true, base_revision: null }, 'base_revision'),
    ]
  })(),
  ...((): BodyCase[] => {
    const r = (body: unknown, field: string): BodyCase => ({
      route: 'POST …/change-requests/:id/approve',
      method: 'POST',
      path: (t) => `/api/environments/${t.environmentId}/change-requests/1/approve`,
      body,
      field,
    })
    return [r({ force: 'yes' }, 'force'), r({ force: true, reason: 'x' }, 'reason')]
  })(),
  // The envelope of the per-environment sync receiver (operations are named operations[i].… instead).
  ...((): BodyCase[] => {
    const r = (body: unknown, field: string): BodyCase => ({
      route: 'POST …/sync',
      method: 'POST',
      path: (t) => `/api/environments/${t.environmentId}/sync`,
      body,
      field,
    })
    return [
      r({ operations: [] }, 'batchId'),
      r({ batchId: 5, operations: [] }, 'batchId'),
      r({ batchId: '', operations: [] }, 'batchId'),
      r({ batchId: 'b1' }, 'operations'),
      r({ batchId: 'b1', operations: {} }, 'operations'),
      r({ batchId: 'b1', operations: [], actor: 'x' }, 'actor'),
      ...NOT_OBJECTS.map(([, body]) => r(body, '(root)')),
    ]
  })(),
]

describe.each(DIALECTS)('bad request bodies on %s', (dialect) => {
  let h: Harness
  let target: Target
  beforeAll(async () => {
    h = await startHarness(dialect)
    const memberId = await h.createUser({ email: 'member@example.com', role: 'editor' })
    await h.call(`/api/projects/${h.defaultProjectId}/members`, {
      method: 'POST',
      as: h.admin,
      body: { user_id: memberId, role: 'viewer' },
    })
    const envs = (await h.call(`/api/projects/${h.defaultProjectId}/environments`, { as: h.admin })).body
    target = { projectId: h.defaultProjectId, environmentId: envs[1].id, memberId }
  })
  afterAll(async () => {
    await h?.dispose()
  })

  it.each(
    CASES.map((c) => [c.route, JSON.stringify(c.body instanceof Function ? '(fn)' : c.body)?.slice(0, 60), c] as const),
  )('%s %s → 422 naming the field, nothing changed', async (_route, _label, c) => {
    const before = await h.dump()
    const body = typeof c.body === 'function' ? (c.body as (t: Target) => unknown)(target) : c.body
    const res = await h.call(c.path(target), { method: c.method, as: h.admin, body })
    expect(res.status).toBe(422)
    expect(res.body.code).toBe('validation_failed')
    expect(res.body.issues.map((i: { path: string }) => i.path)).toContain(c.field)
    expect(res.body.error).toMatch(/^invalid [\w -]+: /)
    expect(res.body.error).toContain(`${c.field}: `)
    for (const issue of res.body.issues) expect(issue.message).toEqual(expect.any(String))
    expect(await h.dump()).toEqual(before)
  })

  it('names every unknown field, each at its own path', async () => {
    const res = await h.call('/api/users', {
      method: 'POST',
      as: h.admin,
      body: { name: 'Eve', email: 'eve@example.com', role: 'viewer', password: 'password-123', a: 1, b: 2 },
    })
    expect(res.body.issues).toEqual([
      { path: 'a', message: 'unknown field' },
      { path: 'b', message: 'unknown field' },
    ])
  })

  it('explains the fields that cannot be set', async () => {
    const res = await h.call(`/api/projects/${target.projectId}/environments/${target.environmentId}`, {
      method: 'PATCH',
      as: h.admin,
      body: { slug: 'other' },
    })
    expect(res.body.issues).toContainEqual({ path: 'slug', message: 'cannot be changed after creation' })
    const empty = await h.call(`/api/projects/${target.projectId}/environments/${target.environmentId}`, {
      method: 'PATCH',
      as: h.admin,
      body: {},
    })
    expect(empty.body).toEqual({
      error: 'invalid environment: (root): send name or color',
      code: 'validation_failed',
      issues: [{ path: '(root)', message: 'send name or color' }],
    })
  })
})
