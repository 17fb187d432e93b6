import { TABLES } from '@flagsync/store'
import { DIALECTS } from '@flagsync/test-support/databases'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { SERVICE_TABLES } from '../src/tables.js'
import { PEOPLE_SCOPE } from '../src/users/events.js'
import { bearer, type Harness, seedFlags, startHarness, T0 } from './harness.js'

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/
const MISSING_UUID = '00000000-0000-4000-8000-000000000000'

describe.each(DIALECTS)('projects, members, environments and SDK keys on %s', (dialect) => {
  let h: Harness
  beforeEach(async () => {
    h = await startHarness(dialect)
  })
  afterEach(async () => {
    await h.dispose()
  })

  const createProject = async (name: string) => {
    const res = await h.call('/api/projects', { method: 'POST', as: h.admin, body: { name } })
    if (res.status !== 200) throw new Error(`create ${name}: ${res.status} ${JSON.stringify(res.body)}`)
    return res.body
  }
  const environments = async (projectId: string) =>
    (await h.call(`/api/projects/${projectId}/environments`, { as: h.admin })).body as Array<{
      id: string
      slug: string
      is_default: boolean
    }>
  const envBySlug = async (projectId: string, slug: string) =>
    (await environments(projectId)).find((e) => e.slug === slug) as { id: string; slug: string; is_default: boolean }

  describe('projects', () => {
    it('POST derives the slug, seeds Production (default), Staging and Development and a Production SDK key', async () => {
      h.clock.advance(5000)
      const res = await h.call('/api/projects', { method: 'POST', as: h.admin, body: { name: '  Café Mobile App ' } })
      expect(res.status).toBe(200)
      expect(res.body).toEqual({
        id: expect.stringMatching(UUID),
        name: 'Café Mobile App',
        slug: 'cafe-mobile-app',
        environment_count: 3,
        member_count: 0,
        created_at: new Date(T0 + 5000).toISOString(),
        sdk_key: {
          id: expect.any(Number),
          name: 'Production key',
          kind: 'server',
          key: expect.stringMatching(/^sk_live_[A-Za-z0-9_-]{43}$/),
          prefix: expect.stringMatching(/^sk_live_.{4}…$/),
          environment_id: expect.stringMatching(UUID),
          environment_name: 'Production',
          created_at: new Date(T0 + 5000).toISOString(),
        },
      })
      const envs = await h.call(`/api/projects/${res.body.id}/environments`, { as: h.admin })
      expect(
        envs.body.map((e: { name: string; slug: string; is_default: boolean }) => [e.name, e.slug, e.is_default]),
      ).toEqual([
        ['Production', 'production', true],
        ['Staging', 'staging', false],
        ['Development', 'development', false],
      ])
      expect(envs.body[0].id).toBe(res.body.sdk_key.environment_id)
      // The seeded key works and is bound to Production of this project.
      const seen = await h.call('/api/projects', { as: bearer(res.body.sdk_key.key) })
      expect(seen.body.map((p: { id: string }) => p.id)).toEqual([res.body.id])
    })

    it('answers 409 when the derived slug exists, and 422 when nothing is left for a slug', async () => {
      await createProject('Mobile App')
      const before = await h.dump()
      const clash = await h.call('/api/projects', { method: 'POST', as: h.admin, body: { name: 'mobile—app!' } })
      expect(clash).toMatchObject({
        status: 409,
        body: { code: 'conflict', error: 'a project with the slug "mobile-app" exists' },
      })
      const empty = await h.call('/api/projects', { method: 'POST', as: h.admin, body: { name: '日本' } })
      expect(empty.status).toBe(422)
      expect(empty.body).toMatchObject({ code: 'validation_failed', issues: [{ path: 'name' }] })
      expect(await h.dump()).toEqual(before)
    })

    it('GET lists all projects for a workspace admin, with counts, oldest first; GET one answers one', async () => {
      h.clock.advance(1000)
      const web = await createProject('Web')
      await h.createUser({ email: 'm@example.com', role: 'editor' })
      await h.call(`/api/projects/${web.id}/members`, {
        method: 'POST',
        as: h.admin,
        body: { user_id: 2, role: 'viewer' },
      })
      const list = await h.call('/api/projects', { as: h.admin })
      expect(list.status).toBe(200)
      expect(list.body.map((p: { name: string; member_count: number }) => [p.name, p.member_count])).toEqual([
        ['Default', 0],
        ['Web', 1],
      ])
      const one = await h.call(`/api/projects/${web.id}`, { as: h.admin })
      expect(one).toMatchObject({
        status: 200,
        body: { id: web.id, name: 'Web', member_count: 1, environment_count: 3 },
      })
      for (const id of [MISSING_UUID, 'not-a-uuid']) {
        expect(await h.call(`/api/projects/${id}`, { as: h.admin })).toMatchObject({
          status: 404,
          body: { code: 'not_found' },
        })
      }
    })

    it('PATCH renames and re-derives the slug; 409 when another project has it; 404 when missing', async () => {
      const web = await createProject('Web')
      const res = await h.call(`/api/projects/${web.id}`, { method: 'PATCH', as: h.admin, body: { name: 'Web Shop' } })
      expect(res).toMatchObject({ status: 200, body: { id: web.id, name: 'Web Shop', slug: 'web-shop' } })
      // Its own slug is no clash.
      const same = await h.call(`/api/projects/${web.id}`, { method: 'PATCH', as: h.admin, body: { name: 'WEB shop' } })
      expect(same).toMatchObject({ status: 200, body: { name: 'WEB shop', slug: 'web-shop' } })
      const clash = await h.call(`/api/projects/${web.id}`, { method: 'PATCH', as: h.admin, body: { name: 'default' } })
      expect(clash).toMatchObject({ status: 409, body: { code: 'conflict' } })
      const missing = await h.call(`/api/projects/${MISSING_UUID}`, {
        method: 'PATCH',
        as: h.admin,
        body: { name: 'x' },
      })
      expect(missing.status).toBe(404)
    })

    it('DELETE cascades to environments, members, SDK keys and the flags of its environments (204)', async () => {
      const web = await createProject('Web')
      const userId = await h.createUser({ email: 'm@example.com', role: 'editor' })
      await h.call(`/api/projects/${web.id}/members`, {
        method: 'POST',
        as: h.admin,
        body: { user_id: userId, role: 'admin' },
      })
      const webEnvs = (await environments(web.id)).map((e) => e.id)
      const defaultEnv = (await environments(h.defaultProjectId))[0]?.id as string
      for (const env of webEnvs) await seedFlags(h, env, ['a', 'b'])
      await seedFlags(h, defaultEnv, ['kept'])
      const changes: Array<{ scope: string; key: string; flag: unknown }> = []
      h.server.runtime.onFlagChanges((c) => {
        changes.push(...c)
      })

      const res = await h.request(`/api/projects/${web.id}`, { method: 'DELETE', as: h.admin })
      expect(res.status).toBe(204)
      const dump = await h.dump()
      const knex = h.server.runtime.knex
      expect(await knex(SERVICE_TABLES.projects).pluck('id')).toEqual([h.defaultProjectId])
      expect(dump[SERVICE_TABLES.environments]?.some((e) => webEnvs.includes((e as { id: string }).id))).toBe(false)
      expect(await knex(SERVICE_TABLES.sdkKeys).where('project_id', web.id)).toEqual([])
      expect(dump[SERVICE_TABLES.members]).toEqual([])
      expect(await knex(TABLES.flags).whereIn('scope', webEnvs)).toEqual([])
      // Only the other project's flag is left (people changes keep one change-log row per user in their own scope).
      expect(await knex(TABLES.flags).whereNot('scope', PEOPLE_SCOPE).pluck('key')).toEqual(['kept'])
      // Each removed flag reached the change log (and the listeners) as a deletion.
      expect(changes).toHaveLength(6)
      expect(changes.every((c) => c.flag === null && webEnvs.includes(c.scope))).toBe(true)
      const logged = await knex(TABLES.changes).whereNull('data').select('scope', 'key')
      expect(logged).toHaveLength(6)
      // The deleted project's key no longer authenticates.
      expect((await h.call('/api/projects', { as: bearer(web.sdk_key.key) })).status).toBe(401)
    })

    it('DELETE answers 422 for the last project and 404 for a missing one', async () => {
      const before = await h.dump()
      const last = await h.call(`/api/projects/${h.defaultProjectId}`, { method: 'DELETE', as: h.admin })
      expect(last).toMatchObject({
        status: 422,
        body: { code: 'validation_failed', error: 'cannot delete the last project: a workspace keeps at least one' },
      })
      expect(await h.dump()).toEqual(before)
      expect((await h.call(`/api/projects/${MISSING_UUID}`, { method: 'DELETE', as: h.admin })).status).toBe(404)
    })

    it('two concurrent deletes of the last two projects leave one', async () => {
      const web = await createProject('Web')
      const results = await Promise.all([
        h.call(`/api/projects/${web.id}`, { method: 'DELETE', as: h.admin }),
        h.call(`/api/projects/${h.defaultProjectId}`, { method: 'DELETE', as: h.admin }),
      ])
      expect(results.map((r) => r.status).sort()).toEqual([204, 422])
      expect(await h.server.runtime.knex(SERVICE_TABLES.projects).count({ n: '*' }).first()).toEqual({
        n: dialect === 'postgres' ? '1' : 1,
      })
    })
  })

  describe('members', () => {
    it('POST adds, GET lists, PATCH changes the role, DELETE removes (204)', async () => {
      const eve = await h.createUser({ email: 'eve@example.com', role: 'editor', name: 'Eve' })
      const base = `/api/projects/${h.defaultProjectId}/members`
      const added = await h.call(base, { method: 'POST', as: h.admin, body: { user_id: eve, role: 'viewer' } })
      expect(added).toMatchObject({
        status: 200,
        body: { user_id: eve, name: 'Eve', email: 'eve@example.com', role: 'viewer' },
      })
      expect(Object.keys(added.body).sort()).toEqual(['email', 'name', 'role', 'user_id'])
      expect((await h.call(base, { as: h.admin })).body).toEqual([added.body])
      const patched = await h.call(`${base}/${eve}`, { method: 'PATCH', as: h.admin, body: { role: 'admin' } })
      expect(patched).toMatchObject({ status: 200, body: { user_id: eve, role: 'admin' } })
      expect((await h.request(`${base}/${eve}`, { method: 'DELETE', as: h.admin })).status).toBe(204)
      expect((await h.call(base, { as: h.admin })).body).toEqual([])
    })

    it('answers 409 for a user already a member, 422 for a user that does not exist, 404 for a non-member', async () => {
      const eve = await h.createUser({ email: 'eve@example.com', role: 'editor' })
      const base = `/api/projects/${h.defaultProjectId}/members`
      await h.call(base, { method: 'POST', as: h.admin, body: { user_id: eve, role: 'viewer' } })
      const before = await h.dump()
      const again = await h.call(base, { method: 'POST', as: h.admin, body: { user_id: eve, role: 'admin' } })
      expect(again).toMatchObject({ status: 409, body: { code: 'conflict' } })
      const ghost = await h.call(base, { method: 'POST', as: h.admin, body: { user_id: 999, role: 'admin' } })
      expect(ghost).toMatchObject({ status: 422, body: { code: 'validation_failed', issues: [{ path: 'user_id' }] } })
      for (const id of ['999', 'x']) {
        expect((await h.call(`${base}/${id}`, { method: 'PATCH', as: h.admin, body: { role: 'admin' } })).status).toBe(
          404,
        )
        expect((await h.call(`${base}/${id}`, { method: 'DELETE', as: h.admin })).status).toBe(404)
      }
      expect((await h.call(`/api/projects/${MISSING_UUID}/members`, { as: h.admin })).status).toBe(404)
      expect(await h.dump()).toEqual(before)
    })
  })

  describe('environments', () => {
    const base = () => `/api/projects/${h.defaultProjectId}/environments`

    it('POST creates with the default color, or the given one; GET lists them', async () => {
      h.clock.advance(1000)
      const res = await h.call(base(), { method: 'POST', as: h.admin, body: { name: 'QA', slug: 'qa' } })
      expect(res.status).toBe(200)
      expect(res.body).toEqual({
        id: expect.stringMatching(UUID),
        name: 'QA',
        slug: 'qa',
        color: '#6366f1',
        is_default: false,
        require_approval: false,
        created_at: new Date(T0 + 1000).toISOString(),
      })
      const colored = await h.call(base(), {
        method: 'POST',
        as: h.admin,
        body: { name: 'Preview', slug: 'preview-1', color: '#ABC' },
      })
      expect(colored.body.color).toBe('#abc')
      const list = (await h.call(base(), { as: h.admin })).body
      expect(list.map((e: { slug: string }) => e.slug)).toEqual([
        'production',
        'staging',
        'development',
        'qa',
        'preview-1',
      ])
    })

    it('accepts a 100-character name and a 64-character slug; 409 for a slug that exists in the project only', async () => {
      const ok = await h.call(base(), {
        method: 'POST',
        as: h.admin,
        body: { name: 'n'.repeat(100), slug: 's'.repeat(64) },
      })
      expect(ok.status).toBe(200)
      const before = await h.dump()
      const clash = await h.call(base(), { method: 'POST', as: h.admin, body: { name: 'Prod 2', slug: 'production' } })
      expect(clash).toMatchObject({
        status: 409,
        body: { code: 'conflict', error: 'an environment with the slug "production" exists in this project' },
      })
      expect(await h.dump()).toEqual(before)
      // Another project may use the same slug.
      const other = await createProject('Other')
      const reuse = await h.call(`/api/projects/${other.id}/environments`, {
        method: 'POST',
        as: h.admin,
        body: { name: 'QA', slug: 's'.repeat(64) },
      })
      expect(reuse.status).toBe(200)
    })

    it('PATCH changes name and color only', async () => {
      const staging = await envBySlug(h.defaultProjectId, 'staging')
      const res = await h.call(`${base()}/${staging.id}`, {
        method: 'PATCH',
        as: h.admin,
        body: { name: 'Pre-production', color: '#112233' },
      })
      expect(res).toMatchObject({
        status: 200,
        body: { id: staging.id, name: 'Pre-production', slug: 'staging', color: '#112233' },
      })
      const nameOnly = await h.call(`${base()}/${staging.id}`, {
        method: 'PATCH',
        as: h.admin,
        body: { name: 'Stage' },
      })
      expect(nameOnly.body).toMatchObject({ name: 'Stage', color: '#112233' })
      for (const id of [MISSING_UUID, 'x']) {
        expect((await h.call(`${base()}/${id}`, { method: 'PATCH', as: h.admin, body: { name: 'y' } })).status).toBe(
          404,
        )
      }
    })

    it('POST …/default makes exactly one environment the default', async () => {
      const staging = await envBySlug(h.defaultProjectId, 'staging')
      const res = await h.call(`${base()}/${staging.id}/default`, { method: 'POST', as: h.admin })
      expect(res).toMatchObject({ status: 200, body: { id: staging.id, is_default: true } })
      const defaults = (await environments(h.defaultProjectId)).filter((e) => e.is_default).map((e) => e.slug)
      expect(defaults).toEqual(['staging'])
      expect((await h.call(`${base()}/${MISSING_UUID}/default`, { method: 'POST', as: h.admin })).status).toBe(404)
    })

    it('POST …/require-approval sets and clears the setting', async () => {
      const prod = await envBySlug(h.defaultProjectId, 'production')
      const on = await h.call(`${base()}/${prod.id}/require-approval`, {
        method: 'POST',
        as: h.admin,
        body: { require_approval: true },
      })
      expect(on).toMatchObject({ status: 200, body: { id: prod.id, require_approval: true } })
      expect((await envBySlug(h.defaultProjectId, 'production')) as unknown).toMatchObject({ require_approval: true })
      const off = await h.call(`${base()}/${prod.id}/require-approval`, {
        method: 'POST',
        as: h.admin,
        body: { require_approval: false },
      })
      expect(off.body.require_approval).toBe(false)
      const missing = await h.call(`${base()}/${MISSING_UUID}/require-approval`, {
        method: 'POST',
        as: h.admin,
        body: { require_approval: true },
      })
      expect(missing.status).toBe(404)
    })

    it('DELETE removes an environment with its flags and SDK keys (204)', async () => {
      const staging = await envBySlug(h.defaultProjectId, 'staging')
      await seedFlags(h, staging.id, ['x', 'y'])
      const key = await h.call(`/api/projects/${h.defaultProjectId}/keys`, {
        method: 'POST',
        as: h.admin,
        body: { name: 'staging', environment_id: staging.id },
      })
      const res = await h.request(`${base()}/${staging.id}`, { method: 'DELETE', as: h.admin })
      expect(res.status).toBe(204)
      const knex = h.server.runtime.knex
      expect(await knex(TABLES.flags).where('scope', staging.id)).toEqual([])
      expect(await knex(SERVICE_TABLES.sdkKeys).where('id', key.body.id)).toEqual([])
      expect((await environments(h.defaultProjectId)).map((e) => e.slug)).toEqual(['production', 'development'])
    })

    it('DELETE answers 422 for the default, for the last environment and for the holder of the last server keys', async () => {
      const envs = await environments(h.defaultProjectId)
      const [prod, staging, dev] = envs as [(typeof envs)[0], (typeof envs)[0], (typeof envs)[0]]
      const before = await h.dump()
      const isDefault = await h.call(`${base()}/${prod.id}`, { method: 'DELETE', as: h.admin })
      expect(isDefault).toMatchObject({
        status: 422,
        body: { code: 'validation_failed', error: expect.stringContaining('default environment') },
      })
      expect(await h.dump()).toEqual(before)

      // Production holds the only key: after making Staging the default, Production still cannot go.
      await h.call(`${base()}/${staging.id}/default`, { method: 'POST', as: h.admin })
      const lastKeys = await h.call(`${base()}/${prod.id}`, { method: 'DELETE', as: h.admin })
      expect(lastKeys).toMatchObject({ status: 422, body: { error: expect.stringContaining('last server keys') } })

      await h.call(`/api/projects/${h.defaultProjectId}/keys`, {
        method: 'POST',
        as: h.admin,
        body: { name: 'staging', environment_id: staging.id },
      })
      expect((await h.request(`${base()}/${prod.id}`, { method: 'DELETE', as: h.admin })).status).toBe(204)
      expect((await h.request(`${base()}/${dev.id}`, { method: 'DELETE', as: h.admin })).status).toBe(204)
      const last = await h.call(`${base()}/${staging.id}`, { method: 'DELETE', as: h.admin })
      expect(last).toMatchObject({
        status: 422,
        body: { code: 'validation_failed', error: 'cannot delete the last environment of a project' },
      })
      for (const id of [MISSING_UUID, 'x']) {
        expect((await h.call(`${base()}/${id}`, { method: 'DELETE', as: h.admin })).status).toBe(404)
      }
    })

    it('an environment of another project is a 404 through this project', async () => {
      const other = await createProject('Other')
      const foreign = await envBySlug(other.id, 'staging')
      expect(
        (await h.call(`${base()}/${foreign.id}`, { method: 'PATCH', as: h.admin, body: { name: 'x' } })).status,
      ).toBe(404)
      expect((await h.call(`${base()}/${foreign.id}`, { method: 'DELETE', as: h.admin })).status).toBe(404)
    })
  })

  describe('SDK keys', () => {
    const base = () => `/api/projects/${h.defaultProjectId}/keys`

    it('POST returns the full key once; GET lists prefixes with the environment name; only hashes are stored', async () => {
      const dev = await envBySlug(h.defaultProjectId, 'development')
      const res = await h.call(base(), {
        method: 'POST',
        as: h.admin,
        body: { name: 'Dev server', environment_id: dev.id },
      })
      expect(res.status).toBe(200)
      expect(res.body).toEqual({
        id: expect.any(Number),
        name: 'Dev server',
        kind: 'server',
        key: expect.stringMatching(/^sk_live_[A-Za-z0-9_-]{43}$/),
        prefix: `${res.body.key.slice(0, 12)}…`,
        environment_id: dev.id,
        environment_name: 'Development',
        created_at: new Date(T0).toISOString(),
      })
      const list = await h.call(base(), { as: h.admin })
      expect(list.body).toHaveLength(2)
      expect(list.body[1]).toEqual({ ...res.body, key: undefined })
      for (const key of list.body) expect(key).not.toHaveProperty('key')
      expect(list.body[0]).toMatchObject({ environment_name: 'Production', prefix: expect.stringMatching(/^sk_live_/) })

      const dump = JSON.stringify(await h.dump())
      expect(dump).not.toContain(res.body.key)
      expect(dump).not.toContain(h.defaultSdkKey)
      expect(dump).not.toContain(res.body.key.slice(12))
      // The key authenticates, bound to its environment.
      expect((await h.call(base(), { as: bearer(res.body.key) })).status).toBe(200)
    })

    it('POST answers 422 for an environment outside the project', async () => {
      const other = await createProject('Other')
      const foreign = await envBySlug(other.id, 'production')
      const before = await h.dump()
      for (const environment_id of [foreign.id, MISSING_UUID, 'nope']) {
        const res = await h.call(base(), { method: 'POST', as: h.admin, body: { name: 'k', environment_id } })
        expect(res).toMatchObject({
          status: 422,
          body: { code: 'validation_failed', issues: [{ path: 'environment_id' }] },
        })
      }
      expect(await h.dump()).toEqual(before)
    })

    it('DELETE removes a key (204) and it stops authenticating; 422 for the last server key; 404 for a missing one', async () => {
      const prod = await envBySlug(h.defaultProjectId, 'production')
      const created = await h.call(base(), {
        method: 'POST',
        as: h.admin,
        body: { name: 'k2', environment_id: prod.id },
      })
      expect((await h.request(`${base()}/${created.body.id}`, { method: 'DELETE', as: h.admin })).status).toBe(204)
      expect((await h.call(base(), { as: bearer(created.body.key) })).status).toBe(401)
      const remaining = (await h.call(base(), { as: h.admin })).body
      expect(remaining).toHaveLength(1)
      const before = await h.dump()
      const last = await h.call(`${base()}/${remaining[0].id}`, { method: 'DELETE', as: h.admin })
      expect(last).toMatchObject({
        status: 422,
        body: {
          code: 'validation_failed',
          error: 'cannot delete the last server key of a project: create another first',
        },
      })
      expect(await h.dump()).toEqual(before)
      for (const id of ['9999', 'x'])
        expect((await h.call(`${base()}/${id}`, { method: 'DELETE', as: h.admin })).status).toBe(404)
      // A key of another project is not found through this one.
      const other = await createProject('Other')
      const foreign = await h.call(`${base()}/${other.sdk_key.id}`, { method: 'DELETE', as: h.admin })
      expect(foreign.status).toBe(404)
    })
  })
})
