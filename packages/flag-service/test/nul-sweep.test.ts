import type { AddressInfo } from 'node:net'
import { createServiceApp } from '@flagsync/flag-service'
import { errorHandler } from '@flagsync/server-kit'
import { DIALECTS } from '@flagsync/test-support/databases'
import { mountedRoutes } from '@flagsync/test-support/express-routes'
import express from 'express'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { databaseFailures } from '../src/app.js'
import { createProject, type Project } from './flags/support.js'
import { type Caller, type Harness, headersFor, startHarness } from './harness.js'

/**
 * PostgreSQL text cannot hold U+0000: a NUL that reaches SQL is an error of
 * the driver (`invalid byte sequence for encoding "UTF8": 0x00`), a 500 for
 * any string that reaches a query unchecked (a token, environment or login
 * name, an impression value and its query filter). This sweep puts a NUL into
 * every string of a valid body, every object's keys, every path segment and
 * every query parameter of every mounted route, on both dialects: never a
 * 5xx, and every error is a JSON `{error, code}`. A route added without a case
 * here fails the first test.
 */

interface Ids {
  project: Project
  userId: number
  tokenId: number
  keyId: number
  changeRequestId: number
  scheduleId: number | string
  webhookId: number | string
  deliveryId: number | string
}

interface RouteCase {
  /** As `mountedRoutes` names it. */
  route: string
  path(ids: Ids): string
  /** A valid body whose every string (and object) gets a NUL in turn. */
  body?: (ids: Ids) => unknown
  /** The query parameters the route reads. */
  query?: string[]
  /** Default: the admin's session. */
  as?: 'sdk' | 'throwaway'
  /** A new pending change request before each request (an approval or rejection that succeeds ends one). */
  refile?: boolean
}

const flag = { key: 'f0', is_enabled: true, description: 'd', flag_type: 'string', default_value: 'a' }
const segment = {
  key: 's1',
  name: 'Seg',
  description: 'd',
  rules: [{ attribute: 'country', operator: 'equals', values: ['de'] }],
}
const AUDIT = ['since', 'cursor', 'limit']
/** The change routes' filters: `actor` reaches SQL as a name. */
const CHANGES = [...AUDIT, 'flag', 'actor', 'from', 'to']
const hook = { url: 'https://hooks.example.com/flags', events: ['flag.updated'], description: 'd' }
const RUN_AT = () => new Date(Date.now() + 3_600_000).toISOString()

const p = (ids: Ids) => `/api/projects/${ids.project.id}`
const e = (ids: Ids) => `/api/environments/${ids.project.production}`
const staging = (ids: Ids) => `/api/environments/${ids.project.staging}`

const CASES: RouteCase[] = [
  { route: 'GET /health', path: () => '/health' },
  { route: 'GET /api/auth/workspace', path: () => '/api/auth/workspace' },
  {
    route: 'POST /api/auth/login',
    path: () => '/api/auth/login',
    body: () => ({ email: 'nobody@example.com', password: 'password-123' }),
  },
  { route: 'POST /api/auth/logout', path: () => '/api/auth/logout', as: 'throwaway' },
  { route: 'GET /api/auth/me', path: () => '/api/auth/me' },
  {
    // A too-short new password keeps every variant a 422: a wrong current password would count toward the
    // admin's lockout, and a valid change would replace the admin's password for the cases after it.
    route: 'POST /api/auth/password',
    path: () => '/api/auth/password',
    body: () => ({ current_password: 'correct horse battery', new_password: 'short' }),
  },
  { route: 'GET /api/users', path: () => '/api/users' },
  {
    route: 'POST /api/users',
    path: () => '/api/users',
    body: () => ({ name: 'Eve', email: 'eve@example.com', role: 'viewer', password: 'password-123' }),
  },
  { route: 'DELETE /api/users/:param', path: (ids) => `/api/users/${ids.userId}` },
  {
    route: 'PATCH /api/users/:param',
    path: (ids) => `/api/users/${ids.userId}`,
    body: () => ({ role: 'editor', name: 'M' }),
  },
  {
    route: 'POST /api/users/:param/password',
    path: (ids) => `/api/users/${ids.userId}/password`,
    body: () => ({ password: 'password-456' }),
  },
  { route: 'GET /api/users/audit', path: () => '/api/users/audit', query: AUDIT },
  { route: 'GET /api/tokens', path: () => '/api/tokens' },
  {
    route: 'POST /api/tokens',
    path: () => '/api/tokens',
    body: () => ({ name: 't', scope: 'read_only', expires_in_days: 30 }),
  },
  { route: 'DELETE /api/tokens/:param', path: (ids) => `/api/tokens/${ids.tokenId}` },
  { route: 'GET /api/projects', path: () => '/api/projects' },
  { route: 'POST /api/projects', path: () => '/api/projects', body: () => ({ name: 'Web' }) },
  { route: 'GET /api/projects/:param', path: p },
  { route: 'PATCH /api/projects/:param', path: p, body: () => ({ name: 'Web' }) },
  { route: 'DELETE /api/projects/:param', path: p },
  { route: 'GET /api/projects/:param/members', path: (ids) => `${p(ids)}/members` },
  {
    route: 'POST /api/projects/:param/members',
    path: (ids) => `${p(ids)}/members`,
    body: (ids) => ({ user_id: ids.userId, role: 'viewer' }),
  },
  {
    route: 'PATCH /api/projects/:param/members/:param',
    path: (ids) => `${p(ids)}/members/${ids.userId}`,
    body: () => ({ role: 'editor' }),
  },
  { route: 'DELETE /api/projects/:param/members/:param', path: (ids) => `${p(ids)}/members/${ids.userId}` },
  { route: 'GET /api/projects/:param/environments', path: (ids) => `${p(ids)}/environments` },
  {
    route: 'PUT /api/projects/:param/environments/order',
    path: (ids) => `${p(ids)}/environments/order`,
    body: (ids) => ({ environment_ids: [ids.project.production, ids.project.staging, ids.project.development] }),
  },
  {
    route: 'POST /api/projects/:param/environments',
    path: (ids) => `${p(ids)}/environments`,
    body: () => ({ name: 'QA', slug: 'qa', color: '#abcdef' }),
  },
  {
    route: 'PATCH /api/projects/:param/environments/:param',
    path: (ids) => `${p(ids)}/environments/${ids.project.development}`,
    body: () => ({ name: 'Dev', color: '#abcdef' }),
  },
  {
    route: 'DELETE /api/projects/:param/environments/:param',
    path: (ids) => `${p(ids)}/environments/${ids.project.development}`,
  },
  {
    route: 'POST /api/projects/:param/environments/:param/default',
    path: (ids) => `${p(ids)}/environments/${ids.project.production}/default`,
  },
  {
    route: 'POST /api/projects/:param/environments/:param/require-approval',
    path: (ids) => `${p(ids)}/environments/${ids.project.staging}/require-approval`,
    body: () => ({ require_approval: true }),
  },
  { route: 'GET /api/projects/:param/keys', path: (ids) => `${p(ids)}/keys` },
  {
    route: 'POST /api/projects/:param/keys',
    path: (ids) => `${p(ids)}/keys`,
    body: (ids) => ({ name: 'k', environment_id: ids.project.production }),
  },
  { route: 'DELETE /api/projects/:param/keys/:param', path: (ids) => `${p(ids)}/keys/${ids.keyId}` },
  {
    route: 'GET /api/environments/:param/flags',
    path: (ids) => `${e(ids)}/flags`,
    query: ['tag', 'stale', 'archived'],
  },
  { route: 'GET /api/environments/:param/flags/:param', path: (ids) => `${e(ids)}/flags/f0` },
  { route: 'POST /api/environments/:param/flags', path: (ids) => `${e(ids)}/flags`, body: () => flag },
  {
    route: 'PATCH /api/environments/:param/flags/:param',
    path: (ids) => `${e(ids)}/flags/f0`,
    body: () => ({ description: 'x', default_value: 'b' }),
  },
  { route: 'DELETE /api/environments/:param/flags/:param', path: (ids) => `${e(ids)}/flags/f0` },
  {
    route: 'POST /api/environments/:param/flags/:param/promote',
    path: (ids) => `${e(ids)}/flags/f0/promote`,
    body: (ids) => ({ target_env_id: ids.project.development }),
  },
  {
    route: 'GET /api/environments/:param/flags/:param/history',
    path: (ids) => `${e(ids)}/flags/f0/history`,
    query: AUDIT,
  },
  {
    route: 'GET /api/environments/:param/change-requests',
    path: (ids) => `${staging(ids)}/change-requests`,
    query: ['status'],
  },
  {
    route: 'GET /api/environments/:param/change-requests/:param',
    path: (ids) => `${staging(ids)}/change-requests/${ids.changeRequestId}`,
  },
  {
    route: 'POST /api/environments/:param/change-requests/:param/approve',
    path: (ids) => `${staging(ids)}/change-requests/${ids.changeRequestId}/approve`,
    query: ['force'],
    refile: true,
  },
  {
    route: 'POST /api/environments/:param/change-requests/:param/reject',
    path: (ids) => `${staging(ids)}/change-requests/${ids.changeRequestId}/reject`,
    body: () => ({ reason: 'no' }),
    refile: true,
  },
  {
    route: 'DELETE /api/environments/:param/change-requests/:param',
    path: (ids) => `${staging(ids)}/change-requests/${ids.changeRequestId}`,
  },
  {
    route: 'POST /api/environments/:param/sync',
    path: (ids) => `${e(ids)}/sync`,
    body: () => ({
      batchId: 'b1',
      operations: [
        { action: 'insert', collection: 'flags', recordId: 'f1', record: { ...flag, key: 'f1' } },
        { action: 'update', collection: 'flags', recordId: 'f0', changes: { description: 'y' } },
      ],
    }),
  },
  {
    route: 'POST /api/environments/:param/evaluate',
    path: (ids) => `${e(ids)}/evaluate`,
    body: () => ({ context: { user_id: 'u1', country: 'NL' }, keys: ['f0', 'missing'] }),
  },
  { route: 'GET /api/environments/:param/changes', path: (ids) => `${e(ids)}/changes`, query: CHANGES },
  {
    route: 'GET /api/projects/:param/changes',
    path: (ids) => `${p(ids)}/changes`,
    query: [...CHANGES, 'environment_id'],
  },
  { route: 'GET /api/projects/:param/compare', path: (ids) => `${p(ids)}/compare`, query: ['from', 'to'] },
  {
    route: 'POST /api/projects/:param/promote',
    path: (ids) => `${p(ids)}/promote`,
    body: (ids) => ({
      from_env_id: ids.project.production,
      to_env_id: ids.project.development,
      flags: [{ key: 'f0', base_revision: null }],
    }),
  },
  { route: 'GET /api/projects/:param/segments', path: (ids) => `${p(ids)}/segments` },
  {
    route: 'PATCH /api/projects/:param/flags/:param/meta',
    path: (ids) => `${p(ids)}/flags/f0/meta`,
    body: () => ({ tags: ['web', 'beta'], owner: null }),
  },
  // Every request of the sweep carries a NUL, so none archives f0 for real.
  { route: 'POST /api/projects/:param/flags/:param/archive', path: (ids) => `${p(ids)}/flags/f0/archive` },
  { route: 'POST /api/projects/:param/flags/:param/restore', path: (ids) => `${p(ids)}/flags/f0/restore` },
  {
    route: 'POST /api/projects/:param/flags',
    path: (ids) => `${p(ids)}/flags`,
    body: (ids) => ({ flag: { ...flag, key: 'f2' }, environment_ids: [ids.project.production, ids.project.staging] }),
  },
  { route: 'GET /api/projects/:param/segments/:param', path: (ids) => `${p(ids)}/segments/s0` },
  { route: 'POST /api/projects/:param/segments', path: (ids) => `${p(ids)}/segments`, body: () => segment },
  {
    route: 'PATCH /api/projects/:param/segments/:param',
    path: (ids) => `${p(ids)}/segments/s0`,
    body: () => ({ name: 'S', description: 'd', rules: segment.rules }),
  },
  { route: 'DELETE /api/projects/:param/segments/:param', path: (ids) => `${p(ids)}/segments/s0` },
  {
    route: 'POST /api/environments/:param/flags/:param/schedules',
    path: (ids) => `${e(ids)}/flags/f0/schedules`,
    body: () => ({ patch: { description: 'later' }, run_at: RUN_AT() }),
  },
  { route: 'GET /api/environments/:param/flags/:param/schedules', path: (ids) => `${e(ids)}/flags/f0/schedules` },
  { route: 'GET /api/environments/:param/schedules', path: (ids) => `${e(ids)}/schedules`, query: ['status'] },
  {
    route: 'POST /api/environments/:param/schedules/:param/approve',
    path: (ids) => `${e(ids)}/schedules/${ids.scheduleId}/approve`,
  },
  { route: 'DELETE /api/environments/:param/schedules/:param', path: (ids) => `${e(ids)}/schedules/${ids.scheduleId}` },
  { route: 'GET /api/projects/:param/webhooks', path: (ids) => `${p(ids)}/webhooks` },
  { route: 'POST /api/projects/:param/webhooks', path: (ids) => `${p(ids)}/webhooks`, body: () => hook },
  { route: 'GET /api/projects/:param/webhooks/:param', path: (ids) => `${p(ids)}/webhooks/${ids.webhookId}` },
  {
    route: 'PATCH /api/projects/:param/webhooks/:param',
    path: (ids) => `${p(ids)}/webhooks/${ids.webhookId}`,
    body: () => ({ ...hook, enabled: true }),
  },
  {
    route: 'GET /api/projects/:param/webhooks/:param/deliveries',
    path: (ids) => `${p(ids)}/webhooks/${ids.webhookId}/deliveries`,
    query: ['limit', 'cursor'],
  },
  {
    route: 'POST /api/projects/:param/webhooks/:param/deliveries/:param/redeliver',
    path: (ids) => `${p(ids)}/webhooks/${ids.webhookId}/deliveries/${ids.deliveryId}/redeliver`,
  },
  {
    route: 'POST /api/projects/:param/webhooks/:param/test',
    path: (ids) => `${p(ids)}/webhooks/${ids.webhookId}/test`,
  },
  {
    route: 'DELETE /api/projects/:param/webhooks/:param',
    path: (ids) => `${p(ids)}/webhooks/${ids.webhookId}`,
  },
  { route: 'GET /stream', path: () => '/stream', query: ['environment_id', 'sdk_key'] },
  {
    route: 'POST /ofrep/v1/evaluate/flags/:param',
    path: () => '/ofrep/v1/evaluate/flags/f0',
    body: () => ({ context: { targetingKey: 'u1', country: 'de' } }),
    as: 'sdk',
  },
  {
    route: 'POST /ofrep/v1/evaluate/flags',
    path: () => '/ofrep/v1/evaluate/flags',
    body: () => ({ context: { targetingKey: 'u1', country: 'de' } }),
    query: ['flagConfigEtag', 'flagConfigLastModified', 'sseEtag', 'sseLastModified'],
    as: 'sdk',
  },
  { route: 'GET /ofrep/v1/configuration', path: () => '/ofrep/v1/configuration', as: 'sdk' },
  { route: 'GET /ofrep/v1/events', path: () => '/ofrep/v1/events', query: ['key'], as: 'sdk' },
  { route: 'GET /flags/snapshot', path: () => '/flags/snapshot', query: ['sdk_key'], as: 'sdk' },
  {
    route: 'POST /api/environments/:param/impressions',
    path: (ids) => `${e(ids)}/impressions`,
    body: () => [{ flag_key: 'f0', user_id: 'u1', value: 'a', context: { plan: 'pro' } }],
    as: 'sdk',
  },
  {
    route: 'GET /api/environments/:param/impressions',
    path: (ids) => `${e(ids)}/impressions`,
    query: ['flag_key', 'user_id', 'value', 'since_id', 'limit', 'offset'],
  },
  {
    route: 'GET /api/environments/:param/impressions/stats',
    path: (ids) => `${e(ids)}/impressions/stats`,
    query: ['limit', 'cursor'],
  },
]

const NUL = '\u0000'

/** The body with a NUL in one place: each string (appended), each object (an extra key). */
function bodyVariants(body: unknown): Array<{ where: string; body: unknown }> {
  const out: Array<{ where: string; body: unknown }> = []
  const visit = (value: unknown, where: string, replace: (v: unknown) => unknown) => {
    if (typeof value === 'string') {
      out.push({ where, body: replace(`${value}${NUL}`) })
      out.push({ where: `${where} (inside)`, body: replace(`a${NUL}b`) })
    } else if (Array.isArray(value)) {
      value.forEach((item, i) => {
        visit(item, `${where}[${i}]`, (v) => replace(value.map((x, j) => (j === i ? v : x))))
      })
    } else if (typeof value === 'object' && value !== null) {
      const obj = value as Record<string, unknown>
      out.push({ where: `${where}{key}`, body: replace({ ...obj, [`k${NUL}`]: 'v' }) })
      for (const key of Object.keys(obj)) {
        visit(obj[key], `${where}.${key}`, (v) => replace({ ...obj, [key]: v }))
      }
    }
  }
  visit(body, '', (v) => v)
  return out
}

/** The path with `%00` appended to its segment `at` (1-based: 0 is before the leading slash). */
const withNulAt = (path: string, at: number) =>
  path
    .split('/')
    .map((x, j) => (j === at ? `${x}%00` : x))
    .join('/')

describe.each(DIALECTS)('a NUL character anywhere in a request on %s', (dialect) => {
  let h: Harness
  let ids: Ids
  /** Files a change request of the staging flag (staging requires approval) and returns its id. */
  const file = async (project: Project): Promise<number> => {
    const filed = await h.call(`/api/environments/${project.staging}/flags/f0`, {
      method: 'PATCH',
      as: h.admin,
      body: { is_enabled: false },
    })
    expect(filed.status).toBe(202)
    return filed.body.id
  }
  beforeAll(async () => {
    h = await startHarness(dialect)
    const project = await createProject(h)
    const userId = await h.createUser({ email: 'member@example.com', role: 'editor' })
    await h.createToken(h.admin, 'read_only')
    const tokens = (await h.call('/api/tokens', { as: h.admin })).body as Array<{ id: number }>
    const keys = (await h.call(`/api/projects/${project.id}/keys`, { as: h.admin })).body as Array<{ id: number }>
    const flags = (env: string) => `/api/environments/${env}/flags`
    for (const env of [project.production, project.staging]) {
      const put = await h.call(flags(env), { method: 'POST', as: h.admin, body: flag })
      expect(put.status).toBe(200)
    }
    expect(
      (
        await h.call(`/api/projects/${project.id}/segments`, {
          method: 'POST',
          as: h.admin,
          body: { ...segment, key: 's0' },
        })
      ).status,
    ).toBe(200)
    const approval = await h.call(`/api/projects/${project.id}/environments/${project.staging}/require-approval`, {
      method: 'POST',
      as: h.admin,
      body: { require_approval: true },
    })
    expect(approval.status).toBe(200)
    const schedule = await h.call(`/api/environments/${project.production}/flags/f0/schedules`, {
      method: 'POST',
      as: h.admin,
      body: { patch: { description: 'later' }, run_at: RUN_AT() },
    })
    expect(schedule.status).toBe(200)
    const webhook = await h.call(`/api/projects/${project.id}/webhooks`, { method: 'POST', as: h.admin, body: hook })
    expect(webhook.status).toBe(200)
    const ping = await h.call(`/api/projects/${project.id}/webhooks/${webhook.body.id}/test`, {
      method: 'POST',
      as: h.admin,
    })
    expect(ping.status).toBeLessThan(300)
    ids = {
      project,
      userId,
      tokenId: tokens[0]?.id as number,
      keyId: keys[0]?.id as number,
      changeRequestId: await file(project),
      scheduleId: schedule.body.id,
      webhookId: webhook.body.id,
      deliveryId: ping.body.id,
    }
  })
  afterAll(async () => {
    await h?.dispose()
  })

  it('every mounted route has a case in this sweep', () => {
    const mounted = [...mountedRoutes(createServiceApp(h.server.runtime))]
    const covered = new Set(CASES.map((c) => c.route))
    expect(mounted.filter((r) => !covered.has(r)).sort()).toEqual([])
    expect(CASES.map((c) => c.route).filter((r) => !mounted.includes(r))).toEqual([])
  })

  it('never a 5xx; every error is a JSON {error, code}', { timeout: 120_000 }, async () => {
    const problems: string[] = []
    const send = async (c: RouteCase, caller: Caller, path: string, body: unknown, label: string) => {
      const method = c.route.split(' ')[0] as string
      const headers: Record<string, string> = { ...headersFor(caller) }
      if (body !== undefined) headers['Content-Type'] = 'application/json'
      const controller = new AbortController()
      const res = await fetch(`${h.url}${path}`, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: controller.signal,
      })
      // A stream that opened is no error; its body never ends, so stop reading.
      const text = res.headers.get('content-type')?.startsWith('text/event-stream') ? '' : await res.text()
      controller.abort()
      let json: { error?: unknown; code?: unknown } | undefined
      try {
        json = JSON.parse(text)
      } catch {
        json = undefined
      }
      const isError = typeof json?.error === 'string' && typeof json?.code === 'string'
      if (res.status >= 500 || (res.status >= 400 && !isError)) {
        problems.push(`${c.route} ${label}: ${res.status} ${text.slice(0, 160)}`)
      }
    }
    for (const c of CASES) {
      const sdk = { kind: 'bearer', secret: ids.project.sdkKey } as const
      const caller: Caller =
        c.as === 'sdk'
          ? sdk
          : c.as === 'throwaway'
            ? await h.login('admin@example.com', 'correct horse battery')
            : h.admin
      const session = caller.kind === 'session' ? { ...caller, csrf: true } : caller
      const idsNow = async () => (c.refile ? { ...ids, changeRequestId: await file(ids.project) } : ids)
      const valid = c.body?.(ids)
      for (const v of bodyVariants(valid)) await send(c, session, c.path(await idsNow()), v.body, `body${v.where}`)
      const segments = c.path(ids).split('/').length
      for (let at = 1; at < segments; at++) {
        const i = await idsNow()
        await send(c, session, withNulAt(c.path(i), at), c.body?.(i), `path segment ${at}`)
      }
      // An unknown parameter is ignored, so only GETs get one: a write would happen for real.
      const unknown = c.route.startsWith('GET ') ? [`x${NUL}`] : []
      for (const name of [...(c.query ?? []), ...unknown]) {
        const query = `${encodeURIComponent(name)}=${encodeURIComponent(`x${NUL}y`)}`
        const i = await idsNow()
        await send(c, session, `${c.path(i)}?${query}`, c.body?.(i), `query ${JSON.stringify(name)}`)
      }
    }
    expect(problems).toEqual([])
  })
})

describe('a value PostgreSQL refuses, at a route whose schema let it through', () => {
  it('is a 422 validation_failed, not a 500 (the net behind the schemas)', async () => {
    const h = await startHarness('postgres')
    // The service app's error chain behind a route that sends a NUL to PostgreSQL unchecked.
    const app = express()
    app.get('/unchecked', async (req, res) => {
      res.json(await h.server.runtime.knex.raw('select ?::text as t', [String(req.query.v)]))
    })
    app.use(databaseFailures)
    app.use(errorHandler())
    const server = app.listen(0, '127.0.0.1')
    await new Promise((resolve) => server.once('listening', resolve))
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/unchecked?v=`
      const res = await fetch(`${url}a%00b`)
      expect(res.status).toBe(422)
      expect(await res.json()).toMatchObject({ code: 'validation_failed', error: expect.stringContaining('NUL') })
      expect((await fetch(`${url}ab`)).status).toBe(200)
    } finally {
      await new Promise((resolve) => server.close(resolve))
      await h.dispose()
    }
  })
})
