import { DIALECTS } from '@flagsync/test-support/databases'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { SERVICE_TABLES } from '../src/tables.js'
import { ADMIN_PASSWORD, anonymous, bearer, type Caller, type Harness, startHarness } from './harness.js'

/**
 * The role table of the README, cell by cell. Each caller is one kind of
 * credential; project routes are called on project P, where:
 * - A    workspace admin (session), not a member of P
 * - PA   workspace editor, project admin of P
 * - PE   workspace editor, project editor of P
 * - PV   workspace editor, project viewer of P
 * - WV   workspace viewer, project admin of P (a workspace viewer only ever reads)
 * - NM   workspace editor, not a member of P
 * - K    SDK key of P
 * - K2   SDK key of another project
 * - RO   read_only personal access token of the workspace admin
 * - RW   read_write personal access token of PE
 * - AN   no credentials
 */
const CALLERS = ['A', 'PA', 'PE', 'PV', 'WV', 'NM', 'K', 'K2', 'RO', 'RW', 'AN'] as const
type CallerName = (typeof CALLERS)[number]

/** ✓ is the route's success status; numbers are refusals. */
const Y = 'ok' as const
type Cell = typeof Y | 401 | 403 | 404

//                         A   PA   PE   PV   WV   NM   K    K2   RO   RW   AN
const PUBLIC: Cell[] = [Y, Y, Y, Y, Y, Y, Y, Y, Y, Y, Y]
const ME: Cell[] = [Y, Y, Y, Y, Y, Y, 401, 401, Y, Y, 401]
const ANY_USER: Cell[] = [Y, Y, Y, Y, Y, Y, 403, 403, Y, Y, 401]
const USER_WRITE: Cell[] = [Y, Y, Y, Y, Y, Y, 403, 403, 403, Y, 401]
const WS_ADMIN: Cell[] = [Y, 403, 403, 403, 403, 403, 403, 403, 403, 403, 401]
const SESSION_ONLY: Cell[] = [Y, Y, Y, Y, Y, Y, 403, 403, 403, 403, 401]
const WS_ADMIN_READ: Cell[] = [Y, 403, 403, 403, 403, 403, 403, 403, Y, 403, 401]
const ANY_CALLER: Cell[] = [Y, Y, Y, Y, Y, Y, Y, Y, Y, Y, 401]
const PROJECT_READ: Cell[] = [Y, Y, Y, Y, Y, 404, Y, 404, Y, Y, 401]
const PROJECT_ADMIN: Cell[] = [Y, Y, 403, 403, 403, 404, Y, 404, 403, 403, 401]

interface Ctx {
  h: Harness
  callers: Record<CallerName, Caller>
  /** The session of the user behind each user caller (to prepare that user's own tokens). */
  owners: Partial<Record<CallerName, Caller>>
  projectId: string
  unique(): string
  freshUserId(): Promise<number>
  /** A fresh user added to P as a viewer. */
  freshMemberId(): Promise<number>
  freshEnvironmentId(): Promise<string>
}

interface Route {
  name: string
  cells: Cell[]
  success: 200 | 204
  /** Prepares what the call needs (a fresh target) and makes it as `as`; resolves the status. */
  run(ctx: Ctx, as: Caller, name: CallerName): Promise<number>
}

const status = async (p: Promise<{ status: number }>) => (await p).status

const ROUTES: Route[] = [
  {
    name: 'GET /api/auth/workspace',
    cells: PUBLIC,
    success: 200,
    run: (c, as) => status(c.h.call('/api/auth/workspace', { as })),
  },
  { name: 'GET /api/auth/me', cells: ME, success: 200, run: (c, as) => status(c.h.call('/api/auth/me', { as })) },
  {
    // Each user keeps their password (set again to itself): the other routes log nobody in afterwards anyway.
    name: 'POST /api/auth/password',
    cells: SESSION_ONLY,
    success: 204,
    run: (c, as, name) => {
      const current = name === 'A' ? ADMIN_PASSWORD : 'password-123'
      const body = { current_password: current, new_password: current }
      return status(c.h.call('/api/auth/password', { method: 'POST', as, body }))
    },
  },
  { name: 'GET /api/users', cells: ANY_USER, success: 200, run: (c, as) => status(c.h.call('/api/users', { as })) },
  {
    name: 'POST /api/users',
    cells: WS_ADMIN,
    success: 200,
    run: (c, as) =>
      status(
        c.h.call('/api/users', {
          method: 'POST',
          as,
          body: { name: 'New', email: `${c.unique()}@example.com`, role: 'viewer', password: 'password-123' },
        }),
      ),
  },
  {
    name: 'DELETE /api/users/:id',
    cells: WS_ADMIN,
    success: 204,
    run: async (c, as) => status(c.h.call(`/api/users/${await c.freshUserId()}`, { method: 'DELETE', as })),
  },
  {
    name: 'PATCH /api/users/:id',
    cells: WS_ADMIN,
    success: 200,
    run: async (c, as) =>
      status(c.h.call(`/api/users/${await c.freshUserId()}`, { method: 'PATCH', as, body: { name: 'Renamed' } })),
  },
  {
    name: 'POST /api/users/:id/password',
    cells: WS_ADMIN,
    success: 204,
    run: async (c, as) =>
      status(
        c.h.call(`/api/users/${await c.freshUserId()}/password`, {
          method: 'POST',
          as,
          body: { password: 'new-pass-1' },
        }),
      ),
  },
  {
    name: 'GET /api/users/audit',
    cells: WS_ADMIN_READ,
    success: 200,
    run: (c, as) => status(c.h.call('/api/users/audit', { as })),
  },
  { name: 'GET /api/tokens', cells: ANY_USER, success: 200, run: (c, as) => status(c.h.call('/api/tokens', { as })) },
  {
    name: 'POST /api/tokens',
    cells: USER_WRITE,
    success: 200,
    run: (c, as) => status(c.h.call('/api/tokens', { method: 'POST', as, body: { name: 't', scope: 'read_only' } })),
  },
  {
    name: 'DELETE /api/tokens/:id (own)',
    cells: USER_WRITE,
    success: 204,
    run: async (c, as, name) => {
      const owner = c.owners[name]
      let id = 1
      if (owner) {
        await c.h.createToken(owner, 'read_only')
        const tokens = (await c.h.call('/api/tokens', { as: owner })).body as Array<{ id: number; name: string }>
        id = (tokens.at(-1) as { id: number }).id
      }
      return status(c.h.call(`/api/tokens/${id}`, { method: 'DELETE', as }))
    },
  },
  {
    name: 'GET /api/projects',
    cells: ANY_CALLER,
    success: 200,
    run: (c, as) => status(c.h.call('/api/projects', { as })),
  },
  {
    name: 'POST /api/projects',
    cells: WS_ADMIN,
    success: 200,
    run: (c, as) => status(c.h.call('/api/projects', { method: 'POST', as, body: { name: c.unique() } })),
  },
  {
    name: 'GET /api/projects/:id',
    cells: PROJECT_READ,
    success: 200,
    run: (c, as) => status(c.h.call(`/api/projects/${c.projectId}`, { as })),
  },
  {
    name: 'PATCH /api/projects/:id',
    cells: PROJECT_ADMIN,
    success: 200,
    run: (c, as) =>
      status(c.h.call(`/api/projects/${c.projectId}`, { method: 'PATCH', as, body: { name: `P ${c.unique()}` } })),
  },
  {
    name: 'DELETE /api/projects/:id',
    cells: WS_ADMIN,
    success: 204,
    run: async (c, as) => {
      const created = await c.h.call('/api/projects', { method: 'POST', as: c.h.admin, body: { name: c.unique() } })
      return status(c.h.call(`/api/projects/${created.body.id}`, { method: 'DELETE', as }))
    },
  },
  {
    name: 'GET …/members',
    cells: PROJECT_READ,
    success: 200,
    run: (c, as) => status(c.h.call(`/api/projects/${c.projectId}/members`, { as })),
  },
  {
    name: 'POST …/members',
    cells: PROJECT_ADMIN,
    success: 200,
    run: async (c, as) =>
      status(
        c.h.call(`/api/projects/${c.projectId}/members`, {
          method: 'POST',
          as,
          body: { user_id: await c.freshUserId(), role: 'viewer' },
        }),
      ),
  },
  {
    name: 'PATCH …/members/:user_id',
    cells: PROJECT_ADMIN,
    success: 200,
    run: async (c, as) => {
      const id = await c.freshMemberId()
      return status(
        c.h.call(`/api/projects/${c.projectId}/members/${id}`, { method: 'PATCH', as, body: { role: 'editor' } }),
      )
    },
  },
  {
    name: 'DELETE …/members/:user_id',
    cells: PROJECT_ADMIN,
    success: 204,
    run: async (c, as) => {
      const id = await c.freshMemberId()
      return status(c.h.call(`/api/projects/${c.projectId}/members/${id}`, { method: 'DELETE', as }))
    },
  },
  {
    name: 'GET …/environments',
    cells: PROJECT_READ,
    success: 200,
    run: (c, as) => status(c.h.call(`/api/projects/${c.projectId}/environments`, { as })),
  },
  {
    name: 'POST …/environments',
    cells: PROJECT_ADMIN,
    success: 200,
    run: (c, as) =>
      status(
        c.h.call(`/api/projects/${c.projectId}/environments`, {
          method: 'POST',
          as,
          body: { name: 'Env', slug: c.unique() },
        }),
      ),
  },
  {
    name: 'PATCH …/environments/:env_id',
    cells: PROJECT_ADMIN,
    success: 200,
    run: async (c, as) =>
      status(
        c.h.call(`/api/projects/${c.projectId}/environments/${await c.freshEnvironmentId()}`, {
          method: 'PATCH',
          as,
          body: { color: '#000000' },
        }),
      ),
  },
  {
    name: 'DELETE …/environments/:env_id',
    cells: PROJECT_ADMIN,
    success: 204,
    run: async (c, as) =>
      status(
        c.h.call(`/api/projects/${c.projectId}/environments/${await c.freshEnvironmentId()}`, { method: 'DELETE', as }),
      ),
  },
  {
    name: 'PUT …/environments/order',
    cells: PROJECT_ADMIN,
    success: 200,
    run: async (c, as) => {
      const listed = await c.h.call(`/api/projects/${c.projectId}/environments`, { as: c.h.admin })
      const ids = (listed.body as Array<{ id: string }>).map((e) => e.id).reverse()
      return status(
        c.h.call(`/api/projects/${c.projectId}/environments/order`, {
          method: 'PUT',
          as,
          body: { environment_ids: ids },
        }),
      )
    },
  },
  {
    name: 'POST …/environments/:env_id/default',
    cells: PROJECT_ADMIN,
    success: 200,
    run: async (c, as) =>
      status(
        c.h.call(`/api/projects/${c.projectId}/environments/${await c.freshEnvironmentId()}/default`, {
          method: 'POST',
          as,
        }),
      ),
  },
  {
    name: 'POST …/environments/:env_id/require-approval',
    cells: PROJECT_ADMIN,
    success: 200,
    run: async (c, as) =>
      status(
        c.h.call(`/api/projects/${c.projectId}/environments/${await c.freshEnvironmentId()}/require-approval`, {
          method: 'POST',
          as,
          body: { require_approval: true },
        }),
      ),
  },
  {
    name: 'GET …/keys',
    cells: PROJECT_READ,
    success: 200,
    run: (c, as) => status(c.h.call(`/api/projects/${c.projectId}/keys`, { as })),
  },
  {
    name: 'POST …/keys',
    cells: PROJECT_ADMIN,
    success: 200,
    run: async (c, as) =>
      status(
        c.h.call(`/api/projects/${c.projectId}/keys`, {
          method: 'POST',
          as,
          body: { name: 'k', environment_id: await c.freshEnvironmentId() },
        }),
      ),
  },
  {
    name: 'DELETE …/keys/:id',
    cells: PROJECT_ADMIN,
    success: 204,
    run: async (c, as) => {
      const created = await c.h.call(`/api/projects/${c.projectId}/keys`, {
        method: 'POST',
        as: c.h.admin,
        body: { name: 'to delete', environment_id: await c.freshEnvironmentId() },
      })
      return status(c.h.call(`/api/projects/${c.projectId}/keys/${created.body.id}`, { method: 'DELETE', as }))
    },
  },
]

const CASES = ROUTES.flatMap((route) =>
  CALLERS.map((caller, i) => {
    const cell = route.cells[i] as Cell
    return { route, caller, expected: cell === Y ? route.success : cell }
  }),
)

describe.each(DIALECTS)('role table on %s', (dialect) => {
  let ctx: Ctx
  let otherProjectId: string

  beforeAll(async () => {
    const h = await startHarness(dialect)
    let counter = 0
    const unique = () => `u${++counter}-${Date.now().toString(36)}`
    const makeProject = async (name: string) =>
      (await h.call('/api/projects', { method: 'POST', as: h.admin, body: { name } })).body as {
        id: string
        sdk_key: { key: string }
      }
    const p = await makeProject('Roles')
    const q = await makeProject('Other')
    otherProjectId = q.id
    const user = async (email: string, role: 'editor' | 'viewer', projectRole?: 'admin' | 'editor' | 'viewer') => {
      const id = await h.createUser({ email, role, password: 'password-123' })
      if (projectRole) {
        await h.call(`/api/projects/${p.id}/members`, {
          method: 'POST',
          as: h.admin,
          body: { user_id: id, role: projectRole },
        })
      }
      return h.login(email, 'password-123')
    }
    const pa = await user('pa@example.com', 'editor', 'admin')
    const pe = await user('pe@example.com', 'editor', 'editor')
    const pv = await user('pv@example.com', 'editor', 'viewer')
    const wv = await user('wv@example.com', 'viewer', 'admin')
    const nm = await user('nm@example.com', 'editor')
    const callers: Record<CallerName, Caller> = {
      A: h.admin,
      PA: pa,
      PE: pe,
      PV: pv,
      WV: wv,
      NM: nm,
      K: bearer(p.sdk_key.key),
      K2: bearer(q.sdk_key.key),
      RO: bearer(await h.createToken(h.admin, 'read_only')),
      RW: bearer(await h.createToken(pe, 'read_write')),
      AN: anonymous,
    }
    const knex = h.server.runtime.knex
    const freshUserId = async () => {
      // Straight into the table: these users never log in, so no scrypt run is needed.
      const [row] = (await knex(SERVICE_TABLES.users).insert(
        { email: `${unique()}@example.com`, name: 'Fresh', role: 'viewer', password_hash: 'x', created_at: 0 },
        ['id'],
      )) as Array<{ id: number }>
      return Number(row?.id)
    }
    ctx = {
      h,
      callers,
      owners: { A: h.admin, PA: pa, PE: pe, PV: pv, WV: wv, NM: nm, RO: h.admin, RW: pe },
      projectId: p.id,
      unique,
      freshUserId,
      async freshMemberId() {
        const id = await freshUserId()
        await h.call(`/api/projects/${p.id}/members`, {
          method: 'POST',
          as: h.admin,
          body: { user_id: id, role: 'viewer' },
        })
        return id
      },
      async freshEnvironmentId() {
        const res = await h.call(`/api/projects/${p.id}/environments`, {
          method: 'POST',
          as: h.admin,
          body: { name: 'Fresh', slug: unique() },
        })
        return res.body.id as string
      },
    }
  })
  afterAll(async () => {
    await ctx?.h.dispose()
  })

  it.each(CASES.map((c) => [c.route.name, c.caller, c.expected, c] as const))(
    '%s as %s → %s',
    async (_route, caller, expected, { route }) => {
      const got = await route.run(ctx, ctx.callers[caller], caller)
      expect(got).toBe(expected)
    },
  )

  it('GET /api/projects shows workspace admins every project, everyone else only theirs', async () => {
    const names = async (caller: CallerName) =>
      ((await ctx.h.call('/api/projects', { as: ctx.callers[caller] })).body as Array<{ id: string }>).map((p) => p.id)
    const all = await names('A')
    expect(all).toEqual(expect.arrayContaining([ctx.h.defaultProjectId, ctx.projectId, otherProjectId]))
    expect(await names('RO')).toEqual(all)
    for (const caller of ['PA', 'PE', 'PV', 'WV', 'RW', 'K'] as const)
      expect(await names(caller)).toEqual([ctx.projectId])
    expect(await names('NM')).toEqual([])
    expect(await names('K2')).toEqual([otherProjectId])
  })
})
