import { DIALECTS } from '@flagsync/test-support/databases'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { bearer, DAY, type Harness, type Json } from '../harness.js'
import { createWebhook, startReceiver, startWebhookHarness } from '../webhooks/support.js'
import {
  createProject,
  definitionOf,
  keyHeader,
  member,
  openStream,
  type Project,
  parsed,
  putFlag,
  sdkKeyFor,
  setRequireApproval,
  snapshotOfDatabase,
} from './support.js'

const pathsOf = (body: Json) => (body.issues as Array<{ path: string }>).map((i) => i.path)

describe.each(DIALECTS)('flag lifecycle on %s', (dialect) => {
  let h: Harness
  let p: Project
  beforeAll(async () => {
    h = await startWebhookHarness(dialect)
    p = await createProject(h)
  })
  afterAll(async () => {
    await h?.dispose()
  })

  const flagsPath = (env: string, rest = '') => `/api/environments/${env}/flags${rest}`
  const lifecycle = (project: string, key: string, action: string) => `/api/projects/${project}/flags/${key}/${action}`

  it('tags and owner are set on create and by PATCH …/meta, project-wide, and on every flag read', async () => {
    const created = await h.call(flagsPath(p.development), {
      method: 'POST',
      as: h.admin,
      body: { key: 'checkout', is_enabled: true, tags: ['Payments', ' web ', 'web'], owner: h.adminId },
    })
    expect(created.status, JSON.stringify(created.body)).toBe(200)
    const read = await h.call(flagsPath(p.development, '/checkout'), { as: h.admin })
    expect(read.body).toMatchObject({ key: 'checkout', tags: ['payments', 'web'], owner: h.adminId })
    const both = await h.call(`/api/projects/${p.id}/flags`, {
      method: 'POST',
      as: h.admin,
      body: { flag: { key: 'search', is_enabled: false, tags: ['web'] }, environment_ids: [p.staging, p.production] },
    })
    expect(both.status, JSON.stringify(both.body)).toBe(200)
    await putFlag(h, p.staging, { key: 'checkout', is_enabled: false })
    // The tags describe the flag: every environment reads the same.
    const staging = (await h.call(flagsPath(p.staging), { as: h.admin })).body as Json[]
    expect(staging.map((f) => [f.key, f.tags, f.owner])).toEqual([
      ['checkout', ['payments', 'web'], h.adminId],
      ['search', ['web'], null],
    ])

    const editor = await member(h, p.id, 'editor', 'editor')
    const patched = await h.call(lifecycle(p.id, 'search', 'meta'), {
      method: 'PATCH',
      as: editor.as,
      body: { tags: ['web', 'beta'], owner: editor.id },
    })
    expect(patched.status, JSON.stringify(patched.body)).toBe(200)
    expect(patched.body).toEqual({ key: 'search', tags: ['beta', 'web'], owner: editor.id })
    expect((await h.call(flagsPath(p.production, '/search'), { as: h.admin })).body).toMatchObject({
      tags: ['beta', 'web'],
      owner: editor.id,
    })
    // Dashboard metadata: the SDK wire carries the flag's definition only.
    const snapshot = await h.call('/flags/snapshot', { as: { kind: 'bearer', secret: p.sdkKey } })
    const served = (snapshot.body as Json[]).find((f) => f.key === 'search')
    expect(served).toMatchObject({ key: 'search', is_enabled: false })
    for (const field of ['tags', 'owner', 'stale', 'last_changed_at']) expect(served).not.toHaveProperty(field)
  })

  it('?tag= lists the flags with every tag named; a flag read sent back as is is accepted', async () => {
    const keys = async (query: string) =>
      ((await h.call(flagsPath(p.staging, query), { as: h.admin })).body as Json[]).map((f) => f.key)
    expect(await keys('?tag=web')).toEqual(['checkout', 'search'])
    expect(await keys('?tag=web&tag=beta')).toEqual(['search'])
    expect(await keys('?tag=WEB&tag=payments')).toEqual(['checkout'])
    expect(await keys('?tag=nothing')).toEqual([])

    const read = (await h.call(flagsPath(p.staging, '/checkout'), { as: h.admin })).body
    const back = await h.call(flagsPath(p.staging), { method: 'POST', as: h.admin, body: read })
    expect(back.status, JSON.stringify(back.body)).toBe(200)
    expect((await h.call(flagsPath(p.staging, '/checkout'), { as: h.admin })).body).toMatchObject({
      tags: ['payments', 'web'],
      owner: h.adminId,
    })
  })

  it('refuses bad tags, an unknown owner and bad list queries with a 422 naming the field, changing nothing', async () => {
    const before = await snapshotOfDatabase(h)
    const meta = (body: Json) => h.call(lifecycle(p.id, 'search', 'meta'), { method: 'PATCH', as: h.admin, body })
    const cases: Array<[Json, string]> = [
      [{ tags: ['ok', 'no spaces'] }, 'tags[1]'],
      [{ tags: ['x'.repeat(33)] }, 'tags[0]'],
      [{ tags: Array.from({ length: 21 }, (_, i) => `t${i}`) }, 'tags'],
      [{ owner: 999_999 }, 'owner'],
      [{ owner: 'ada' }, 'owner'],
      [{ owner: 2 ** 40 }, 'owner'],
      [{ colour: 'red' }, 'colour'],
      [{}, '(root)'],
    ]
    for (const [body, path] of cases) {
      const res = await meta(body)
      expect(res.status, JSON.stringify(body)).toBe(422)
      expect(res.body.code).toBe('validation_failed')
      expect(pathsOf(res.body)[0], JSON.stringify(res.body)).toBe(path)
      // The message names what was sent: metadata, whichever check refused it.
      expect(res.body.error).toMatch(/^invalid metadata: /)
    }
    const create = await h.call(flagsPath(p.staging), {
      method: 'POST',
      as: h.admin,
      body: { key: 'fresh', is_enabled: true, owner: 424_242 },
    })
    expect([create.status, pathsOf(create.body)]).toEqual([422, ['owner']])
    for (const [query, path] of [
      ['?tag=Not%20a%20tag', 'tag'],
      ['?stale=yes', 'stale'],
      ['?archived=1', 'archived'],
      ['?stale[]=true', 'stale[]'],
      ['?tags=web', 'tags'],
    ] as const) {
      const res = await h.call(flagsPath(p.staging, query), { as: h.admin })
      expect([res.status, pathsOf(res.body)]).toEqual([422, [path]])
    }
    expect(await snapshotOfDatabase(h)).toEqual(before)
  })

  it('metadata writes are editors’, 404 for a key the project does not have, and audited', async () => {
    const viewer = await member(h, p.id, 'editor', 'viewer')
    for (const action of ['meta', 'archive', 'restore']) {
      const res = await h.call(lifecycle(p.id, 'search', action), {
        method: action === 'meta' ? 'PATCH' : 'POST',
        as: viewer.as,
        body: action === 'meta' ? { tags: ['x'] } : undefined,
      })
      expect([action, res.status]).toEqual([action, 403])
    }
    const missing = await h.call(lifecycle(p.id, 'nope', 'meta'), {
      method: 'PATCH',
      as: h.admin,
      body: { tags: ['x'] },
    })
    expect(missing.status).toBe(404)
    const entry = {
      collection: 'flags',
      environment_id: null,
      key: 'search',
      action: 'update',
      before: { tags: ['web'], owner: null },
      after: { tags: ['beta', 'web'], owner: expect.any(Number) },
      source: { type: 'api', route: 'PATCH /api/projects/:project_id/flags/:key/meta' },
    }
    const history = await h.call(flagsPath(p.production, '/search/history'), { as: h.admin })
    expect(history.body.entries[0]).toMatchObject(entry)
    expect(history.body.entries[0].changedFields.sort()).toEqual(['owner', 'tags'])
    // Older pages still reach the flag's own entries below the metadata's.
    const paged = await h.call(flagsPath(p.production, '/search/history?limit=1'), { as: h.admin })
    expect(paged.body.entries).toHaveLength(1)
    const older = await h.call(flagsPath(p.production, `/search/history?limit=5&cursor=${paged.body.nextCursor}`), {
      as: h.admin,
    })
    expect(older.body.entries.map((e: Json) => [e.environment_id, e.action])).toEqual([
      [null, 'create'],
      [p.production, 'create'],
    ])
    for (const changes of [`/api/projects/${p.id}/changes`, `/api/environments/${p.staging}/changes?flag=search`]) {
      const page = await h.call(changes, { as: h.admin })
      expect(page.body.entries[0], changes).toMatchObject(entry)
    }
  })

  it('archive takes the flag out of every environment and its SDK streams; restore brings back each definition', async () => {
    const q = await createProject(h)
    const dev = { key: 'banner', is_enabled: true, rollout_percentage: 20, description: 'dev' }
    const stg = { key: 'banner', is_enabled: false, description: 'staging' }
    await putFlag(h, q.development, dev)
    await putFlag(h, q.staging, stg)
    const beforeDev = definitionOf((await h.call(flagsPath(q.development, '/banner'), { as: h.admin })).body)
    const stream = await openStream(h, keyHeader(await sdkKeyFor(h, q.id, q.staging)))
    try {
      await stream.waitFor((e) => e.event === 'ready')
      const from = stream.events.length
      const archived = await h.call(lifecycle(q.id, 'banner', 'archive'), { method: 'POST', as: h.admin })
      expect(archived.status, JSON.stringify(archived.body)).toBe(200)
      expect(archived.body).toMatchObject({
        key: 'banner',
        archived: { by: 'admin@example.com', environments: expect.arrayContaining([q.development, q.staging]) },
      })
      await stream.waitFor((e) => e.data.includes('"DELETE"'), 5000, from)
      expect(parsed(stream, from)).toContainEqual(['update', { type: 'DELETE', env_id: q.staging, key: 'banner' }])
      expect((await h.call(flagsPath(q.staging), { as: h.admin })).body).toEqual([])
      expect((await h.call(flagsPath(q.staging, '/banner'), { as: h.admin })).status).toBe(404)
      const listed = (await h.call(flagsPath(q.staging, '?archived=true'), { as: h.admin })).body as Json[]
      expect(listed).toEqual([
        {
          ...stg,
          rollout_percentage: null,
          rules: [],
          flag_type: 'boolean',
          variants: [],
          prerequisites: [],
          tags: [],
          owner: null,
          archived: { at: archived.body.archived.at, by: 'admin@example.com' },
        },
      ])
      // The history says so twice: the definition's delete here, and the flag's archive (project-wide, no environment).
      const route = (action: string) => ({ type: 'api', route: `POST /api/projects/:project_id/flags/:key/${action}` })
      const history = (await h.call(flagsPath(q.staging, '/banner/history'), { as: h.admin })).body.entries as Json[]
      expect(history.slice(0, 2)).toEqual(
        expect.arrayContaining([
          expect.objectContaining({ environment_id: q.staging, action: 'delete', source: route('archive') }),
          expect.objectContaining({
            environment_id: null,
            after: expect.objectContaining({ archived: expect.objectContaining({ by: 'admin@example.com' }) }),
            source: route('archive'),
          }),
        ]),
      )

      // Every way of creating the key is refused while it is archived.
      const fresh = { key: 'banner', is_enabled: true }
      const again = await h.call(flagsPath(q.production), { method: 'POST', as: h.admin, body: fresh })
      expect([again.status, again.body.code, again.body.archived?.key]).toEqual([409, 'conflict', 'banner'])
      expect(again.body.error).toContain('"banner" is archived')
      const everywhere = await h.call(`/api/projects/${q.id}/flags`, {
        method: 'POST',
        as: h.admin,
        body: { flag: fresh, environment_ids: [q.production] },
      })
      expect([everywhere.status, everywhere.body.archived?.key]).toEqual([409, 'banner'])
      const synced = await h.call(`/api/environments/${q.production}/sync`, {
        method: 'POST',
        as: h.admin,
        body: {
          batchId: 'archived-insert',
          operations: [{ action: 'insert', collection: 'flags', recordId: 'banner', record: fresh }],
        },
      })
      expect([synced.status, synced.body.archived?.key]).toEqual([409, 'banner'])
      expect((await h.call(flagsPath(q.production, '/banner'), { as: h.admin })).status).toBe(404)
      const twice = await h.call(lifecycle(q.id, 'banner', 'archive'), { method: 'POST', as: h.admin })
      expect(twice.status).toBe(409)

      const mark = stream.events.length
      const restored = await h.call(lifecycle(q.id, 'banner', 'restore'), { method: 'POST', as: h.admin })
      expect(restored.status, JSON.stringify(restored.body)).toBe(200)
      await stream.waitFor((e) => e.data.includes('"UPSERT"'), 5000, mark)
      const upsert = parsed(stream, mark).find(([, d]) => d.type === 'UPSERT')?.[1]
      expect(upsert?.flag).toMatchObject(stg)
      const afterDev = definitionOf((await h.call(flagsPath(q.development, '/banner'), { as: h.admin })).body)
      expect({ ...afterDev, revision: 0 }).toEqual({ ...beforeDev, revision: 0 })
      expect((await h.call(flagsPath(q.production, '/banner'), { as: h.admin })).status).toBe(404)
      expect((await h.call(flagsPath(q.staging, '?archived=true'), { as: h.admin })).body).toEqual([])
      const restoredHistory = (await h.call(flagsPath(q.staging, '/banner/history'), { as: h.admin })).body
        .entries as Json[]
      expect(restoredHistory.slice(0, 2)).toEqual(
        expect.arrayContaining([
          expect.objectContaining({ environment_id: q.staging, action: 'create', source: route('restore') }),
          expect.objectContaining({ environment_id: null, action: 'delete', source: route('restore') }),
        ]),
      )
      expect((await h.call(lifecycle(q.id, 'banner', 'restore'), { method: 'POST', as: h.admin })).status).toBe(404)
    } finally {
      stream.close()
    }
  })

  it('archive refuses a prerequisite of other flags (409 naming them), editors where approval is required, unknown keys', async () => {
    const q = await createProject(h)
    await putFlag(h, q.staging, { key: 'base', is_enabled: true })
    await putFlag(h, q.staging, { key: 'child', is_enabled: true, prerequisites: [{ flag_key: 'base' }] })
    const before = await snapshotOfDatabase(h)
    const needed = await h.call(lifecycle(q.id, 'base', 'archive'), { method: 'POST', as: h.admin })
    expect([needed.status, needed.body.dependents]).toEqual([409, ['child']])
    expect((await h.call(lifecycle(q.id, 'ghost', 'archive'), { method: 'POST', as: h.admin })).status).toBe(404)
    expect((await h.call(lifecycle(q.id, 'no key!', 'archive'), { method: 'POST', as: h.admin })).status).toBe(404)
    // Both act on every environment and read no body: one asking for less is refused, not obeyed in full.
    for (const action of ['archive', 'restore']) {
      const body = { environments: [q.staging] }
      const scoped = await h.call(lifecycle(q.id, 'child', action), { method: 'POST', as: h.admin, body })
      expect([action, scoped.status, pathsOf(scoped.body)]).toEqual([action, 422, ['environments']])
    }
    expect(await snapshotOfDatabase(h)).toEqual(before)

    await putFlag(h, q.production, { key: 'guarded', is_enabled: true })
    await setRequireApproval(h, q, q.production, true)
    const editor = await member(h, q.id, 'editor', 'editor')
    const refused = await h.call(lifecycle(q.id, 'guarded', 'archive'), { method: 'POST', as: editor.as })
    expect(refused.status).toBe(403)
    expect(refused.body.error).toContain('archiving a flag needs the project admin role')
    const admin = await member(h, q.id, 'editor', 'admin')
    expect((await h.call(lifecycle(q.id, 'guarded', 'archive'), { method: 'POST', as: admin.as })).status).toBe(200)
    // Restoring creates again, which is open to editors where approval is required.
    expect((await h.call(lifecycle(q.id, 'guarded', 'restore'), { method: 'POST', as: editor.as })).status).toBe(200)
  })

  it('archiving delivers flag.deleted per environment and restoring flag.created, named by their routes', async () => {
    const q = await createProject(h)
    const target = await startReceiver()
    try {
      await createWebhook(h, q.id, target, ['flag.created', 'flag.deleted'])
      await putFlag(h, q.staging, { key: 'hooked', is_enabled: true })
      await target.waitFor(1)
      expect((await h.call(lifecycle(q.id, 'hooked', 'archive'), { method: 'POST', as: h.admin })).status).toBe(200)
      expect((await h.call(lifecycle(q.id, 'hooked', 'restore'), { method: 'POST', as: h.admin })).status).toBe(200)
      const got = await target.waitFor(3)
      expect(got.slice(1).map((r) => [r.body.type, r.body.data.source])).toEqual([
        ['flag.deleted', 'api:POST /api/projects/:project_id/flags/:key/archive'],
        ['flag.created', 'api:POST /api/projects/:project_id/flags/:key/restore'],
      ])
    } finally {
      await target.close()
    }
  })

  it('reads carry last_changed_at, last_evaluated_at and stale; ?stale=true lists the stale flags', async () => {
    const q = await createProject(h)
    await putFlag(h, q.production, { key: 'steady', is_enabled: true })
    await putFlag(h, q.production, {
      key: 'targeted',
      is_enabled: true,
      rules: [{ attribute: 'plan', operator: 'equals', values: ['pro'] }],
    })
    await putFlag(h, q.production, { key: 'used', is_enabled: true, rollout_percentage: 50 })
    const createdAt = new Date(h.clock.now).toISOString()
    // A token without expiry: a session would end while the clock moves a month on.
    const reader = bearer(await h.createToken(h.admin, 'read_only'))
    const read = async (key: string) => (await h.call(flagsPath(q.production, `/${key}`), { as: reader })).body
    expect(await read('steady')).toMatchObject({ last_changed_at: createdAt, last_evaluated_at: null, stale: null })

    h.clock.advance(29 * DAY)
    const seen = await h.call(`/api/environments/${q.production}/impressions`, {
      method: 'POST',
      as: { kind: 'bearer', secret: q.sdkKey },
      body: [{ flag_key: 'used', value: 'true', user_id: 'u1' }],
    })
    expect(seen.status, JSON.stringify(seen.body)).toBe(204)
    const seenAt = new Date(h.clock.now).toISOString()
    expect(await read('steady')).toMatchObject({ stale: null })
    h.clock.advance(2 * DAY)
    expect(await read('steady')).toMatchObject({ stale: { reason: 'one_value', since: createdAt } })
    expect(await read('targeted')).toMatchObject({ stale: { reason: 'not_evaluated', since: createdAt } })
    expect(await read('used')).toMatchObject({ last_evaluated_at: seenAt, stale: null })
    const stale = (await h.call(flagsPath(q.production, '?stale=true'), { as: reader })).body as Json[]
    expect(stale.map((f) => f.key)).toEqual(['steady', 'targeted'])
  })
})
