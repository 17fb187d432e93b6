import { createServiceApp } from '@flagsync/flag-service'
import { DIALECTS } from '@flagsync/test-support/databases'
import { mountedRoutes } from '@flagsync/test-support/express-routes'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createProject, type Project } from './flags/support.js'
import { bearer, type Harness, startHarness } from './harness.js'

/**
 * Client keys (`pk_live_…`): bound to one environment, safe to show in a page,
 * admitted only by OFREP and by impression ingest for their environment.
 */
describe.each(DIALECTS)('client keys on %s', (dialect) => {
  let h: Harness
  let project: Project
  let client: { id: number; key: string }
  const keys = () => `/api/projects/${project.id}/keys`
  const impressions = (env: string) => `/api/environments/${env}/impressions`

  beforeAll(async () => {
    h = await startHarness(dialect)
    project = await createProject(h)
    const flag = { key: 'f0', is_enabled: true, flag_type: 'boolean', default_value: true }
    expect(
      (await h.call(`/api/environments/${project.production}/flags`, { method: 'POST', as: h.admin, body: flag }))
        .status,
    ).toBe(200)
    const created = await h.call(keys(), {
      method: 'POST',
      as: h.admin,
      body: { name: 'Web page', environment_id: project.production, kind: 'client' },
    })
    expect(created.status).toBe(200)
    client = { id: created.body.id, key: created.body.key }
  })
  afterAll(async () => {
    await h?.dispose()
  })

  it('POST with kind "client" returns a pk_live_ key; keys list with kind and prefix; the default kind is server', async () => {
    expect(client.key).toMatch(/^pk_live_[A-Za-z0-9_-]{43}$/)
    const list = (await h.call(keys(), { as: h.admin })).body as Array<{ id: number; kind: string; prefix: string }>
    expect(list.find((k) => k.id === client.id)).toMatchObject({
      kind: 'client',
      prefix: `${client.key.slice(0, 12)}…`,
    })
    expect(list[0]).toMatchObject({ kind: 'server', prefix: expect.stringMatching(/^sk_live_/) })
    const bad = await h.call(keys(), {
      method: 'POST',
      as: h.admin,
      body: { name: 'x', environment_id: project.production, kind: 'browser' },
    })
    expect(bad).toMatchObject({ status: 422, body: { code: 'validation_failed', issues: [{ path: 'kind' }] } })
  })

  it('reports impressions for its own environment only', async () => {
    const batch = [{ flag_key: 'f0', user_id: 'u1', value: 'true' }]
    const own = await h.call(impressions(project.production), { method: 'POST', as: bearer(client.key), body: batch })
    expect(own.status).toBeLessThan(300)
    const other = await h.call(impressions(project.staging), { method: 'POST', as: bearer(client.key), body: batch })
    expect(other).toMatchObject({
      status: 403,
      body: { code: 'forbidden', error: expect.stringContaining('client key') },
    })
    // Reading them back is not reporting: refused.
    expect((await h.call(impressions(project.production), { as: bearer(client.key) })).status).toBe(403)
  })

  it('is refused, 403 naming what it may do, by the management API and the SDK stream', async () => {
    for (const path of [
      '/api/projects',
      `/api/projects/${project.id}`,
      `/api/environments/${project.production}/flags`,
      `/stream`,
      `/stream?sdk_key=${client.key}`,
      '/flags/snapshot',
      '/API/projects',
    ]) {
      const res = await h.call(path, { as: path.includes('sdk_key') ? undefined : bearer(client.key) })
      expect(res.status, path).toBe(403)
      expect(res.body, path).toMatchObject({
        code: 'forbidden',
        key_kind: 'client',
        error: expect.stringContaining('may only evaluate flags (OFREP'),
      })
    }
  })

  it('50 parallel writes across every write route change nothing: every one is a 403', async () => {
    const writes = [...mountedRoutes(createServiceApp(h.server.runtime))].filter(
      (r) =>
        !r.startsWith('GET ') &&
        !r.includes('/ofrep/v1/') &&
        r !== 'POST /api/environments/:param/impressions' &&
        r !== 'POST /api/auth/login', // needs no credential: a password logs in
    )
    expect(writes.length).toBeGreaterThan(30)
    const pathOf = (route: string) =>
      route
        .slice(route.indexOf(' ') + 1)
        .replace('/api/projects/:param', `/api/projects/${project.id}`)
        .replace('/api/environments/:param', `/api/environments/${project.production}`)
        .replace('/keys/:param', `/keys/${client.id}`)
        .replace(/:param/g, '1')
    const before = await h.dump()
    const requests = Array.from({ length: Math.max(50, writes.length) }, (_, i) => {
      const route = writes[i % writes.length] as string
      return h
        .call(pathOf(route), {
          method: route.slice(0, route.indexOf(' ')),
          as: bearer(client.key),
          body: { name: 'x', key: 'f1', is_enabled: false, environment_id: project.production, kind: 'server' },
        })
        .then((res) => `${route} ${res.status} ${res.body?.code}`)
    })
    const answers = await Promise.all(requests)
    expect(answers.filter((a) => !a.endsWith(' 403 forbidden'))).toEqual([])
    expect(await h.dump()).toEqual(before)
  })

  it('deleting it ends its OFREP refresh stream at once', async () => {
    const spare = await h.call(keys(), {
      method: 'POST',
      as: h.admin,
      body: { name: 'page', environment_id: project.production, kind: 'client' },
    })
    const controller = new AbortController()
    const res = await fetch(`${h.url}/ofrep/v1/events?key=${spare.body.key}`, { signal: controller.signal })
    expect(res.status).toBe(200)
    const reader = res.body?.getReader()
    const ended = (async () => {
      for (;;) if ((await reader?.read())?.done !== false) return 'ended'
    })()
    // A key still in use keeps its stream: deleting another one closes nothing.
    const other = await h.call(keys(), {
      method: 'POST',
      as: h.admin,
      body: { name: 'o', environment_id: project.production },
    })
    expect((await h.request(`${keys()}/${other.body.id}`, { method: 'DELETE', as: h.admin })).status).toBe(204)
    const timeout = (ms: number) => new Promise((resolve) => setTimeout(() => resolve('open'), ms))
    expect(await Promise.race([ended, timeout(500)])).toBe('open')
    expect((await h.request(`${keys()}/${spare.body.id}`, { method: 'DELETE', as: h.admin })).status).toBe(204)
    expect(await Promise.race([ended, timeout(3000)])).toBe('ended')
    controller.abort()
  })

  it('DELETE revokes it (401 after); the last server key stays undeletable while client keys exist', async () => {
    const spare = await h.call(keys(), {
      method: 'POST',
      as: h.admin,
      body: { name: 'spare', environment_id: project.production, kind: 'client' },
    })
    expect((await h.request(`${keys()}/${spare.body.id}`, { method: 'DELETE', as: h.admin })).status).toBe(204)
    const batch = [{ flag_key: 'f0', value: 'true' }]
    const after = await h.call(impressions(project.production), {
      method: 'POST',
      as: bearer(spare.body.key),
      body: batch,
    })
    expect(after.status).toBe(401)
    const list = (await h.call(keys(), { as: h.admin })).body as Array<{ id: number; kind: string }>
    const server = list.filter((k) => k.kind === 'server')
    expect(server).toHaveLength(1)
    const last = await h.call(`${keys()}/${server[0]?.id}`, { method: 'DELETE', as: h.admin })
    expect(last).toMatchObject({ status: 422, body: { error: expect.stringContaining('last server key') } })
  })
})
