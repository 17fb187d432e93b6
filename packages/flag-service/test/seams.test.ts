import {
  authenticate,
  createServiceApp,
  ensureWorkspace,
  environmentOf,
  loadEnvironment,
  openServiceRuntime,
  requireProjectRole,
  type ServiceRuntime,
} from '@flagsync/flag-service'
import { errorHandler, listen, notFound, type RunningServer } from '@flagsync/server-kit'
import type { FlagChange } from '@flagsync/store'
import { createTestDatabase, DIALECTS, type TestDatabase } from '@flagsync/test-support/databases'
import express from 'express'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { anonymous, bearer, type Caller, headersFor, T0 } from './harness.js'

const SETUP = {
  adminEmail: 'admin@example.com',
  adminPassword: 'admin password',
  workspaceName: 'W',
  adminName: 'Admin',
}

/**
 * What issues 10 and 11 build on: `loadEnvironment` + `requireProjectRole` for
 * `/api/environments/:env_id/…` routes, `req.auth.sdkKey.environmentId`, the
 * flag-change listeners and close hooks of the runtime.
 */
describe.each(DIALECTS)('extension seams on %s', (dialect) => {
  let db: TestDatabase
  let runtime: ServiceRuntime
  let service: RunningServer
  let extension: RunningServer
  let admin: Caller
  let sdkKey: string
  let environments: Array<{ id: string; slug: string }>
  let otherEnvironment: string
  const viewerEmail = 'viewer@example.com'
  let viewer: Caller
  const api = (server: RunningServer, path: string, init: { method?: string; as?: Caller; body?: unknown } = {}) =>
    fetch(`${server.url}${path}`, {
      method: init.method ?? 'GET',
      headers: { ...headersFor(init.as), ...(init.body === undefined ? {} : { 'Content-Type': 'application/json' }) },
      body: init.body === undefined ? undefined : JSON.stringify(init.body),
    })

  beforeAll(async () => {
    db = await createTestDatabase(dialect)
    runtime = await openServiceRuntime({ databaseUrl: db.url, clock: () => T0 })
    const setup = await ensureWorkspace(runtime, SETUP)
    if (setup.status !== 'created') throw new Error('setup failed')
    sdkKey = setup.sdkKey
    service = await listen(createServiceApp(runtime))

    // A feature-style router of its own on the same runtime.
    const app = express()
    app.use(
      '/api/environments/:env_id/probe',
      authenticate(runtime),
      loadEnvironment(runtime),
      requireProjectRole('editor'),
      (req, res) => {
        res.json({ environment: environmentOf(req), auth: req.auth })
      },
    )
    app.use(notFound)
    app.use(errorHandler())
    extension = await listen(app)

    const login = await api(service, '/api/auth/login', {
      method: 'POST',
      body: { email: SETUP.adminEmail, password: SETUP.adminPassword },
    })
    admin = { kind: 'session', cookie: (login.headers.get('set-cookie') ?? '').split(';')[0] ?? '' }
    const user = await api(service, '/api/users', {
      method: 'POST',
      as: admin,
      body: { name: 'V', email: viewerEmail, role: 'editor', password: 'password-123' },
    })
    const userId = (await user.json()).id
    await api(service, `/api/projects/${setup.projectId}/members`, {
      method: 'POST',
      as: admin,
      body: { user_id: userId, role: 'viewer' },
    })
    const viewerLogin = await api(service, '/api/auth/login', {
      method: 'POST',
      body: { email: viewerEmail, password: 'password-123' },
    })
    viewer = { kind: 'session', cookie: (viewerLogin.headers.get('set-cookie') ?? '').split(';')[0] ?? '' }
    environments = await (await api(service, `/api/projects/${setup.projectId}/environments`, { as: admin })).json()
    const other = await (
      await api(service, '/api/projects', { method: 'POST', as: admin, body: { name: 'Other' } })
    ).json()
    otherEnvironment = other.sdk_key.environment_id
  })
  afterAll(async () => {
    await extension?.close()
    await service?.close()
    await runtime?.close()
    await db?.drop()
  })

  const probe = (envId: string, as: Caller) => api(extension, `/api/environments/${envId}/probe`, { as })

  it('loadEnvironment resolves the environment and the role; requireProjectRole guards it', async () => {
    const staging = environments[1] as { id: string; slug: string }
    const res = await probe(staging.id, admin)
    expect(res.status).toBe(200)
    const body = await res.json()
    expect(body.environment).toMatchObject({ id: staging.id, slug: 'staging', role: 'admin', isDefault: false })
    expect(body.auth).toMatchObject({ kind: 'session', user: { email: SETUP.adminEmail, role: 'admin' } })
    expect((await probe(staging.id, viewer)).status).toBe(403)
    expect((await probe(otherEnvironment, viewer)).status).toBe(404)
    expect((await probe('00000000-0000-4000-8000-000000000000', admin)).status).toBe(404)
    expect((await probe('nope', admin)).status).toBe(404)
    expect((await probe(staging.id, anonymous)).status).toBe(401)
  })

  it('an SDK key reaches every environment of its project and carries its own environment id', async () => {
    const [production, staging] = environments as [{ id: string; slug: string }, { id: string; slug: string }]
    const res = await probe(staging.id, bearer(sdkKey))
    expect(res.status).toBe(200)
    expect((await res.json()).auth).toEqual({
      kind: 'sdk_key',
      sdkKey: { id: expect.any(Number), environmentId: production.id, projectId: expect.any(String), kind: 'server' },
    })
    expect((await probe(otherEnvironment, bearer(sdkKey))).status).toBe(404)
  })

  it('runtime.write serializes writes and hands committed flag changes to listeners', async () => {
    const seen: FlagChange[] = []
    const off = runtime.onFlagChanges((changes) => {
      seen.push(...changes)
    })
    const envId = (environments[0] as { id: string }).id
    const result = await runtime.write(async (_trx, flags) => {
      flags.put({ key: 'f', is_enabled: true }, envId)
      return 'done'
    })
    expect(result).toBe('done')
    expect(seen).toEqual([expect.objectContaining({ scope: envId, key: 'f', flag: { key: 'f', is_enabled: true } })])
    await expect(
      runtime.write(async (_trx, flags) => {
        flags.put({ key: 'g', is_enabled: true }, envId)
        throw new Error('rolled back')
      }),
    ).rejects.toThrow('rolled back')
    expect(await runtime.store.get('g', envId)).toBeUndefined()
    expect(seen).toHaveLength(1)
    off()
  })

  it('instances starting together on one empty database all migrate, and exactly one sets the workspace up', async () => {
    const shared = await createTestDatabase(dialect)
    const runtimes = await Promise.all([1, 2, 3].map(() => openServiceRuntime({ databaseUrl: shared.url })))
    try {
      const results = await Promise.all(runtimes.map((rt) => ensureWorkspace(rt, SETUP)))
      expect(results.map((r) => r.status).sort()).toEqual(['created', 'exists', 'exists'])
      const knex = (runtimes[0] as ServiceRuntime).knex
      expect((await knex('flagsync_users').pluck('email')).length).toBe(1)
      expect((await knex('flagsync_projects').pluck('name')).length).toBe(1)
    } finally {
      for (const rt of runtimes) await rt.close()
      await shared.drop()
    }
  })

  it('close hooks run before the database closes, newest first', async () => {
    const other = await createTestDatabase(dialect)
    const rt = await openServiceRuntime({ databaseUrl: other.url })
    const order: string[] = []
    rt.onClose(() => {
      order.push('first')
    })
    rt.onClose(async () => {
      // The database is still open here.
      await rt.knex.raw('select 1')
      order.push('second')
    })
    await rt.close()
    await rt.close() // idempotent
    expect(order).toEqual(['second', 'first'])
    await other.drop()
  })
})
