import { loadServiceConfig, startFlagServiceServer } from '@flagsync/flag-service'
import { silentLogger } from '@flagsync/server-kit'
import { createTestDatabase, DIALECTS } from '@flagsync/test-support/databases'
import { openSse } from '@flagsync/test-support/sse-reader'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type Harness, type Json, startHarness } from '../harness.js'
import {
  bootstrapOf,
  createProject,
  definitionOf,
  flagsOf,
  keyHeader,
  member,
  type Project,
  putFlag,
  served,
  setRequireApproval,
  snapshotOfDatabase,
  storeRevision,
} from './support.js'

/** The paths a 422 names. */
const pathsOf = (body: Json) => (body.issues as Array<{ path: string }>).map((i) => i.path)

describe.each(DIALECTS)('environment flags on %s', (dialect) => {
  let h: Harness
  let p: Project
  beforeAll(async () => {
    h = await startHarness(dialect)
    p = await createProject(h)
  })
  afterAll(async () => {
    await h?.dispose()
  })

  it('creates (defaults filled in), reads, lists in key order, replaces entirely and deletes', async () => {
    const api = flagsOf(h, p.development)
    const created = await api.put({ key: 'zeta', is_enabled: true })
    expect(created.status).toBe(200)
    expect(created.body).toEqual(
      await served(h, p.development, {
        key: 'zeta',
        is_enabled: true,
        rollout_percentage: null,
        description: null,
        rules: [],
        flag_type: 'boolean',
        variants: [],
        prerequisites: [],
      }),
    )
    const full = {
      key: 'alpha',
      is_enabled: true,
      rollout_percentage: 50,
      description: 'a string flag',
      rules: [{ attribute: 'email', operator: 'ends_with', values: ['@example.com'], variant: 'inside' }],
      flag_type: 'string',
      default_value: 'on',
      disabled_value: 'off',
      variants: [
        { weight: 1, value: 'a' },
        { weight: 3, value: 'b' },
      ],
      prerequisites: [{ flag_key: 'zeta', required_value: true }],
    }
    expect((await api.put(full)).body).toEqual(await served(h, p.development, full))
    expect((await api.get('alpha')).body).toEqual(await served(h, p.development, full))
    expect(((await api.list()).body as Json[]).map((f) => f.key)).toEqual(['alpha', 'zeta'])

    // Replacing drops every field the new body leaves out.
    const replaced = await api.put({ key: 'alpha', is_enabled: false })
    expect(replaced.status).toBe(200)
    expect((await api.get('alpha')).body).toEqual(
      await served(h, p.development, { ...created.body, key: 'alpha', is_enabled: false }),
    )

    expect((await api.delete('alpha')).status).toBe(204)
    expect((await api.get('alpha')).status).toBe(404)
    expect((await api.delete('alpha')).status).toBe(404)
    expect(((await api.list()).body as Json[]).map((f) => f.key)).toEqual(['zeta'])
  })

  it('404 for a missing or invisible environment, a missing flag and a key no flag can have', async () => {
    const other = await createProject(h)
    const outsider = await member(h, other.id, 'editor', 'editor')
    expect((await flagsOf(h, '00000000-0000-4000-8000-000000000000').list()).status).toBe(404)
    expect((await flagsOf(h, 'not-a-uuid').list()).status).toBe(404)
    expect((await flagsOf(h, p.production, outsider.as).list()).status).toBe(404)
    const api = flagsOf(h, p.production)
    expect((await api.get('missing')).status).toBe(404)
    expect((await api.get('bad%20key')).status).toBe(404)
    expect((await api.patch('missing', { is_enabled: true })).status).toBe(404)
    expect((await api.promote('missing', p.staging)).status).toBe(404)
    expect((await h.call(`/api/environments/${p.production}/flags`)).status).toBe(401)
    expect((await h.call(`/api/environments/${p.production}/flags/x`, { method: 'PUT', as: h.admin })).status).toBe(405)
  })

  it('422 names each invalid field, and a refused body changes nothing', async () => {
    const api = flagsOf(h, p.development)
    const before = await snapshotOfDatabase(h)
    const cases: Array<[Json, string[]]> = [
      [{ key: 'has space', is_enabled: true }, ['key']],
      [{ key: 'x'.repeat(101), is_enabled: true }, ['key']],
      [{ key: 'r', is_enabled: true, rollout_percentage: 101 }, ['rollout_percentage']],
      [{ key: 'r', is_enabled: true, rollout_percentage: -1 }, ['rollout_percentage']],
      [{ key: 'r', is_enabled: true, rollout_percentage: 2.5 }, ['rollout_percentage']],
      [{ key: 'r', is_enabled: 'yes' }, ['is_enabled']],
      [{ key: 'r', is_enabled: true, flag_type: 'number' }, ['flag_type']],
      [{ key: 'r', is_enabled: true, enabled: true }, ['enabled']],
      // Values that do not match flag_type, wherever they are.
      [{ key: 'b', is_enabled: true, default_value: 'true' }, ['default_value']],
      [{ key: 'b', is_enabled: true, disabled_value: 0 }, ['disabled_value']],
      [
        { key: 's', is_enabled: true, flag_type: 'string', default_value: 1, disabled_value: null },
        ['default_value', 'disabled_value'],
      ],
      [{ key: 'i', is_enabled: true, flag_type: 'integer', default_value: 1.5 }, ['default_value']],
      [{ key: 'i', is_enabled: true, flag_type: 'integer', default_value: '1' }, ['default_value']],
      [
        {
          key: 'i',
          is_enabled: true,
          flag_type: 'integer',
          variants: [
            { weight: 1, value: 1 },
            { weight: 1, value: true },
          ],
        },
        ['variants[1].value'],
      ],
      [
        {
          key: 's',
          is_enabled: true,
          flag_type: 'string',
          rules: [{ attribute: 'a', operator: 'equals', values: ['x'], variant: 2 }],
        },
        ['rules[0].variant'],
      ],
      [{ key: 'v', is_enabled: true, variants: [{ weight: -1, value: true }] }, ['variants[0].weight']],
      [{ key: 'v', is_enabled: true, variants: [{ weight: 2_000_000, value: true }] }, ['variants[0].weight']],
      // Rule shapes: attribute rules need all three fields and a value; segment rules take none of them.
      [{ key: 'r', is_enabled: true, rules: [{ attribute: 'a', values: ['x'] }] }, ['rules[0].operator']],
      [
        { key: 'r', is_enabled: true, rules: [{ attribute: 'a', operator: 'equals', values: [] }] },
        ['rules[0].values'],
      ],
      [
        { key: 'r', is_enabled: true, rules: [{ attribute: 'a', operator: 'like', values: ['x'] }] },
        ['rules[0].operator'],
      ],
      [
        {
          key: 'r',
          is_enabled: true,
          rules: [{ segment_key: 'beta', attribute: 'a', operator: 'equals', values: ['x'] }],
        },
        ['rules[0].attribute', 'rules[0].operator', 'rules[0].values'],
      ],
      [{ key: 'r', is_enabled: true, rules: [{ segment_key: 'no-such-segment' }] }, ['rules[0].segment_key']],
      // Prerequisites: a missing flag, the flag itself, one listed twice.
      [{ key: 'r', is_enabled: true, prerequisites: [{ flag_key: 'nope' }] }, ['prerequisites[0].flag_key']],
      [{ key: 'r', is_enabled: true, prerequisites: [{ flag_key: 'r' }] }, ['prerequisites[0].flag_key']],
      ['"not an object"', ['(root)']],
    ]
    for (const [body, paths] of cases) {
      const res = await api.put(body)
      expect(res.status, JSON.stringify(body)).toBe(422)
      expect(res.body.code).toBe('validation_failed')
      expect(pathsOf(res.body), JSON.stringify(body)).toEqual(paths)
    }
    expect(await snapshotOfDatabase(h)).toEqual(before)
  })

  it('accepts any JSON for json flags, and null as a json value', async () => {
    const api = flagsOf(h, p.development)
    const flag = {
      key: 'json-flag',
      is_enabled: true,
      flag_type: 'json',
      default_value: { a: [1, 'two', null] },
      disabled_value: null,
      variants: [{ weight: 1, value: [1, 2] }],
      rules: [{ attribute: 'a', operator: 'equals', values: ['x'], variant: 'text' }],
    }
    expect((await api.put(flag)).status).toBe(200)
    expect((await api.get('json-flag')).body).toMatchObject(flag)
  })

  it('keeps "__proto__" and "constructor" keys inside JSON values as data, through POST and PATCH', async () => {
    const api = flagsOf(h, p.development)
    // Built by JSON.parse: in an object literal, `__proto__` would set the prototype instead of making a key.
    const value = '{"__proto__":{"a":1},"constructor":1,"nested":{"__proto__":5}}'
    const flag = JSON.parse(
      `{"key":"proto-values","is_enabled":true,"flag_type":"json","default_value":${value},"variants":[{"weight":1,"value":${value}}]}`,
    )
    const created = await api.put(flag)
    expect(created.status, JSON.stringify(created.body)).toBe(200)
    const read = async () =>
      (await h.request(`/api/environments/${p.development}/flags/proto-values`, { as: h.admin })).text()
    const stored = JSON.parse(await read())
    expect(JSON.stringify(stored.default_value)).toBe(value)
    expect(JSON.stringify(stored.variants[0].value)).toBe(value)
    const patched = await api.patch('proto-values', JSON.parse(`{"disabled_value":${value}}`))
    expect(patched.status, JSON.stringify(patched.body)).toBe(200)
    const after = JSON.parse(await read())
    expect([after.default_value, after.disabled_value].map((v) => JSON.stringify(v))).toEqual([value, value])
  })

  it('prerequisites must exist in the environment, form no cycle and have required values of their type', async () => {
    const api = flagsOf(h, p.staging)
    await putFlag(h, p.staging, { key: 'p-base', is_enabled: true })
    await putFlag(h, p.staging, { key: 'p-mid', is_enabled: true, prerequisites: [{ flag_key: 'p-base' }] })
    await putFlag(h, p.staging, {
      key: 'p-top',
      is_enabled: true,
      prerequisites: [{ flag_key: 'p-mid', required_value: true }],
    })
    await putFlag(h, p.production, { key: 'prod-only', is_enabled: true })

    const cycle = await api.patch('p-base', { prerequisites: [{ flag_key: 'p-top' }] })
    expect(cycle.status).toBe(422)
    expect(cycle.body.issues).toEqual([
      { path: 'prerequisites', message: 'prerequisite cycle: p-base -> p-top -> p-mid -> p-base' },
    ])
    expect((await api.put({ key: 'p-base', is_enabled: true, prerequisites: [{ flag_key: 'p-mid' }] })).status).toBe(
      422,
    )
    // A flag of another environment is not a prerequisite here.
    expect(
      pathsOf((await api.put({ key: 'n', is_enabled: true, prerequisites: [{ flag_key: 'prod-only' }] })).body),
    ).toEqual(['prerequisites[0].flag_key'])
    expect(
      pathsOf(
        (await api.put({ key: 'n', is_enabled: true, prerequisites: [{ flag_key: 'p-base', required_value: 'yes' }] }))
          .body,
      ),
    ).toEqual(['prerequisites[0].required_value'])
    // Changing p-mid's type would leave p-top requiring a boolean of a string flag.
    const retype = await api.patch('p-mid', { flag_type: 'string' })
    expect(retype.status).toBe(422)
    expect(pathsOf(retype.body)).toEqual(['flag_type'])
    // A diamond is not a cycle.
    expect(
      (
        await api.put({
          key: 'p-diamond',
          is_enabled: true,
          prerequisites: [{ flag_key: 'p-top' }, { flag_key: 'p-base' }],
        })
      ).status,
    ).toBe(200)
    // A prerequisite cannot be deleted while flags depend on it (409 naming them).
    const del = await api.delete('p-mid')
    expect(del.status).toBe(409)
    expect(del.body.dependents).toEqual(['p-top'])
    expect((await api.get('p-mid')).status).toBe(200)
  })

  it('PATCH merges: omitted fields keep their values, lists replace whole, null clears; the result is validated whole', async () => {
    const api = flagsOf(h, p.development)
    await putFlag(h, p.development, {
      key: 'merge',
      is_enabled: false,
      rollout_percentage: 20,
      description: 'd',
      flag_type: 'string',
      default_value: 'a',
      disabled_value: 'b',
      rules: [{ attribute: 'x', operator: 'equals', values: ['1'] }],
    })
    const res = await api.patch('merge', { is_enabled: true, rules: [], description: null, disabled_value: null })
    expect(res.status).toBe(200)
    expect(res.body).toEqual(
      await served(h, p.development, {
        key: 'merge',
        is_enabled: true,
        rollout_percentage: 20,
        description: null,
        rules: [],
        flag_type: 'string',
        default_value: 'a',
        variants: [],
        prerequisites: [],
      }),
    )
    expect((await api.get('merge')).body).toEqual(res.body)
    expect((await api.patch('merge', { key: 'merge', rollout_percentage: null })).body.rollout_percentage).toBeNull()

    const before = await snapshotOfDatabase(h)
    expect(pathsOf((await api.patch('merge', { key: 'renamed' })).body)).toEqual(['key'])
    expect((await api.patch('merge', {})).status).toBe(422)
    expect(pathsOf((await api.patch('merge', { is_enabled: null })).body)).toEqual(['is_enabled'])
    expect(pathsOf((await api.patch('merge', { bogus: 1 })).body)).toEqual(['bogus'])
    // The patch is fine alone, but the merged flag is not: a string flag's default cannot become 5.
    expect(pathsOf((await api.patch('merge', { default_value: 5 })).body)).toEqual(['default_value'])
    expect(pathsOf((await api.patch('merge', { flag_type: 'integer' })).body)).toEqual(['default_value'])
    expect(await snapshotOfDatabase(h)).toEqual(before)
  })

  it('promote copies the flag into another environment of the project (200 with it as it now is there)', async () => {
    const api = flagsOf(h, p.staging)
    await putFlag(h, p.staging, { key: 'promo-base', is_enabled: true })
    await putFlag(h, p.production, { key: 'promo-base', is_enabled: false })
    const flag = {
      key: 'promo',
      is_enabled: true,
      rollout_percentage: 25,
      description: 'from staging',
      rules: [],
      flag_type: 'integer',
      default_value: 7,
      variants: [],
      prerequisites: [{ flag_key: 'promo-base' }],
    }
    await putFlag(h, p.staging, flag)
    await putFlag(h, p.production, { key: 'promo', is_enabled: false, flag_type: 'string', default_value: 'old' })
    const res = await api.promote('promo', p.production)
    expect(res.status).toBe(200)
    expect(res.body).toEqual(await served(h, p.production, flag))
    expect((await flagsOf(h, p.production).get('promo')).body).toEqual(await served(h, p.production, flag))
    expect((await api.get('promo')).body).toEqual(await served(h, p.staging, flag))
  })

  it('promote refuses another project’s environment, the same environment and prerequisites missing in the target (422), changing nothing', async () => {
    const other = await createProject(h)
    const api = flagsOf(h, p.staging)
    await putFlag(h, p.staging, { key: 'only-here', is_enabled: true })
    await putFlag(h, p.staging, { key: 'needs', is_enabled: true, prerequisites: [{ flag_key: 'only-here' }] })
    await putFlag(h, p.development, { key: 'needs', is_enabled: false })
    const before = await snapshotOfDatabase(h)
    const cross = await api.promote('needs', other.production)
    expect(cross.status).toBe(422)
    expect(pathsOf(cross.body)).toEqual(['target_env_id'])
    expect((await api.promote('needs', p.staging)).status).toBe(422)
    expect((await api.promote('needs', 'not-a-uuid')).status).toBe(422)
    expect(
      (await h.call(`/api/environments/${p.staging}/flags/needs/promote`, { method: 'POST', as: h.admin, body: {} }))
        .status,
    ).toBe(422)
    const missing = await api.promote('needs', p.development)
    expect(missing.status).toBe(422)
    expect(pathsOf(missing.body)).toEqual(['prerequisites[0].flag_key'])
    expect(await snapshotOfDatabase(h)).toEqual(before)
    expect((await flagsOf(h, p.development).get('needs')).body.is_enabled).toBe(false)
  })

  it('where approval is required, only project admins replace, delete or promote over existing flags (editors PATCH)', async () => {
    const q = await createProject(h)
    const editor = await member(h, q.id, 'editor', 'editor')
    const projectAdmin = await member(h, q.id, 'editor', 'admin')
    await putFlag(h, q.staging, { key: 'guarded', is_enabled: true })
    await putFlag(h, q.production, { key: 'guarded', is_enabled: false })
    await setRequireApproval(h, q, q.production, true)
    const asEditor = flagsOf(h, q.production, editor.as)
    const before = await snapshotOfDatabase(h)
    expect((await asEditor.put({ key: 'guarded', is_enabled: true })).status).toBe(403)
    expect((await asEditor.delete('guarded')).status).toBe(403)
    expect((await flagsOf(h, q.staging, editor.as).promote('guarded', q.production)).status).toBe(403)
    expect(await snapshotOfDatabase(h)).toEqual(before)
    // A new flag is not a change to review.
    expect((await asEditor.put({ key: 'brand-new', is_enabled: false })).status).toBe(200)
    const asAdmin = flagsOf(h, q.production, projectAdmin.as)
    expect((await asAdmin.put({ key: 'guarded', is_enabled: true })).status).toBe(200)
    expect((await flagsOf(h, q.staging, projectAdmin.as).promote('guarded', q.production)).status).toBe(200)
    expect((await asAdmin.delete('guarded')).status).toBe(204)
  })

  it('viewers read and cannot write (403); the SDK key of the project writes', async () => {
    const viewer = await member(h, p.id, 'editor', 'viewer')
    const asViewer = flagsOf(h, p.development, viewer.as)
    expect((await asViewer.list()).status).toBe(200)
    expect((await asViewer.put({ key: 'v', is_enabled: true })).status).toBe(403)
    expect((await asViewer.patch('zeta', { is_enabled: false })).status).toBe(403)
    expect((await asViewer.delete('zeta')).status).toBe(403)
    const key = { kind: 'bearer' as const, secret: p.sdkKey }
    expect((await flagsOf(h, p.development, key).put({ key: 'by-key', is_enabled: true })).status).toBe(200)
  })
})

describe.each(DIALECTS)('promote is atomic on %s', (dialect) => {
  it('a commit that fails leaves the target environment and its stream untouched', async () => {
    const db = await createTestDatabase(dialect)
    let failCommits = false
    const server = await startFlagServiceServer(
      loadServiceConfig({
        PORT: '0',
        DATABASE_URL: db.url,
        ADMIN_EMAIL: 'admin@example.com',
        ADMIN_PASSWORD: 'password-123',
        WORKSPACE_NAME: 'Atomic',
      }),
      silentLogger(),
      {
        storeOptions: {
          beforeCommit: () => {
            if (failCommits) throw new Error('injected commit failure')
          },
        },
      },
    )
    try {
      if (server.setup.status !== 'created') throw new Error('setup')
      const auth = { Authorization: `Bearer ${server.setup.sdkKey}` }
      const call = async (path: string, method = 'GET', body?: unknown) => {
        const res = await fetch(`${server.url}${path}`, {
          method,
          headers: { ...auth, 'Content-Type': 'application/json' },
          body: body === undefined ? undefined : JSON.stringify(body),
        })
        const text = await res.text()
        return { status: res.status, body: text ? JSON.parse(text) : undefined }
      }
      const envs = (await call(`/api/projects/${server.setup.projectId}/environments`)).body as Array<{
        id: string
        slug: string
      }>
      const prod = envs.find((e) => e.slug === 'production')?.id as string
      const staging = envs.find((e) => e.slug === 'staging')?.id as string
      await call(`/api/environments/${staging}/flags`, 'POST', { key: 'f', is_enabled: true, rollout_percentage: 5 })
      await call(`/api/environments/${prod}/flags`, 'POST', { key: 'f', is_enabled: false })
      const stream = await openSse(`${server.url}/stream`, keyHeader(server.setup.sdkKey))
      try {
        await bootstrapOf(stream)
        const seen = stream.events.length
        const before = await storeRevision(server.runtime.knex, prod, 'f')
        failCommits = true
        const res = await call(`/api/environments/${staging}/flags/f/promote`, 'POST', { target_env_id: prod })
        failCommits = false
        expect(res.status).toBe(500)
        expect(definitionOf((await call(`/api/environments/${prod}/flags/f`)).body)).toEqual({
          key: 'f',
          is_enabled: false,
          rollout_percentage: null,
          description: null,
          rules: [],
          flag_type: 'boolean',
          variants: [],
          prerequisites: [],
          revision: before,
        })
        // The next successful promote is the first thing the Production stream hears.
        expect(
          (await call(`/api/environments/${staging}/flags/f/promote`, 'POST', { target_env_id: prod })).status,
        ).toBe(200)
        const event = await stream.waitFor(() => true, 5000, seen)
        expect(JSON.parse(event.data).flag).toMatchObject({ key: 'f', is_enabled: true, rollout_percentage: 5 })
        expect(stream.events.length).toBe(seen + 1)
      } finally {
        stream.close()
      }
    } finally {
      await server.close()
      await db.drop()
    }
  })
})
