import { conflictBodySchema } from '@flagsync/protocol'
import { DIALECTS } from '@flagsync/test-support/databases'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type Caller, type Harness, type Json, startHarness } from '../harness.js'
import {
  bootstrapOf,
  createProject,
  flagsOf,
  keyHeader,
  member,
  openStream,
  type Project,
  putFlag,
  setRequireApproval,
  snapshotOfDatabase,
  storeRevision,
  unique,
} from './support.js'

// POST /api/projects/:id/promote copies several flags from one environment into another in one transaction.

describe.each(DIALECTS)('promoting several flags on %s', (dialect) => {
  let h: Harness
  let p: Project
  beforeAll(async () => {
    h = await startHarness(dialect)
    p = await createProject(h)
  })
  afterAll(async () => {
    await h?.dispose()
  })

  const promote = (body: Json, as: Caller = h.admin, projectId = p.id) =>
    h.call(`/api/projects/${projectId}/promote`, { method: 'POST', as, body })
  const body = (flags: Array<[string, number | null]>, from = p.staging, to = p.production) => ({
    from_env_id: from,
    to_env_id: to,
    flags: flags.map(([key, base_revision]) => ({ key, base_revision })),
  })
  const revisionIn = (env: string, key: string) => storeRevision(h.server.runtime.knex, env, key)

  it('writes them all in one transaction: the stream, the audit log and compare see each flag', async () => {
    const [a, b, c] = [unique('a'), unique('b'), unique('c')]
    await putFlag(h, p.staging, { key: a, is_enabled: true, rollout_percentage: 40 })
    await putFlag(h, p.staging, { key: b, is_enabled: true, description: 'from staging' })
    await putFlag(h, p.staging, { key: c, is_enabled: false })
    await putFlag(h, p.production, { key: b, is_enabled: false })
    await putFlag(h, p.production, { key: c, is_enabled: false }) // already the same: unchanged
    const stream = await openStream(h, keyHeader(p.sdkKey))
    await bootstrapOf(stream)
    const from = stream.events.length
    const editor = await member(h, p.id, 'editor', 'editor')
    const bases: Array<[string, number | null]> = [
      [a, null],
      [b, await revisionIn(p.production, b)],
      [c, await revisionIn(p.production, c)],
    ]
    const res = await promote(body(bases), editor.as)
    expect(res.status, JSON.stringify(res.body)).toBe(200)
    expect(res.body).toMatchObject({ from_env_id: p.staging, to_env_id: p.production })
    expect(res.body.flags.map((f: Json) => [f.key, f.changed])).toEqual([
      [a, true],
      [b, true],
      [c, false],
    ])
    const prod = flagsOf(h, p.production)
    for (const f of res.body.flags) expect((await prod.get(f.key)).body).toMatchObject(f.flag)
    expect(res.body.flags[1].flag).toMatchObject({ is_enabled: true, description: 'from staging' })

    await stream.waitFor((e) => e.data.includes(b), 5000, from)
    const updates = stream.events.slice(from).map((e) => JSON.parse(e.data) as Json)
    expect(updates.map((u) => [u.type, u.flag.key])).toEqual([
      ['UPSERT', a],
      ['UPSERT', b],
    ])
    stream.close()

    const changes = await h.call(`/api/environments/${p.production}/changes?limit=10`, { as: h.admin })
    const promoted = (changes.body.entries as Json[]).filter(
      (e) => [a, b, c].includes(e.key) && e.source.type !== 'api',
    )
    expect(promoted.map((e) => [e.key, e.action, e.source])).toEqual([
      [b, 'update', { type: 'other', name: 'promote from Staging' }],
      [a, 'create', { type: 'other', name: 'promote from Staging' }],
    ])
    const compared = await h.call(`/api/projects/${p.id}/compare?from=${p.staging}&to=${p.production}`, { as: h.admin })
    for (const key of [a, b, c]) {
      expect(compared.body.flags.find((f: Json) => f.key === key)).toMatchObject({ status: 'same' })
    }
  })

  it('a conflict writes nothing: 409 listing every conflicting key with its current revision', async () => {
    const [a, b, c] = [unique('a'), unique('b'), unique('c')]
    for (const key of [a, b, c]) await putFlag(h, p.staging, { key, is_enabled: true, description: 'staging' })
    await putFlag(h, p.production, { key: b, is_enabled: false })
    await putFlag(h, p.production, { key: c, is_enabled: false })
    const bases: Array<[string, number | null]> = [
      [a, null],
      [b, await revisionIn(p.production, b)],
      [c, await revisionIn(p.production, c)],
    ]
    // Meanwhile someone edits b and c in Production, and creates a there.
    await flagsOf(h, p.production).patch(b, { description: 'production edit' })
    await flagsOf(h, p.production).patch(c, { description: 'production edit' })
    await putFlag(h, p.production, { key: a, is_enabled: false })
    const before = await snapshotOfDatabase(h)
    const res = await promote(body(bases))
    expect(res.status, JSON.stringify(res.body)).toBe(409)
    const conflicts = conflictBodySchema.parse(res.body).conflicts
    expect(conflicts.map((x) => [x.operationIndex, x.recordId, x.currentRevision])).toEqual([
      [0, a, await revisionIn(p.production, a)],
      [1, b, await revisionIn(p.production, b)],
      [2, c, await revisionIn(p.production, c)],
    ])
    expect(res.body.error).toContain(`${a}, ${b}, ${c}`)
    expect(await snapshotOfDatabase(h)).toEqual(before)
  })

  it('two promotions from the same base race: exactly one wins, the other is a 409', async () => {
    const key = unique('race')
    await putFlag(h, p.staging, { key, is_enabled: true, description: 'staging' })
    await putFlag(h, p.development, { key, is_enabled: true, description: 'development' })
    await putFlag(h, p.production, { key, is_enabled: false })
    const base = await revisionIn(p.production, key)
    const results = await Promise.all([
      promote(body([[key, base]], p.staging)),
      promote(body([[key, base]], p.development)),
    ])
    expect(results.map((r) => r.status).sort()).toEqual([200, 409])
    const winner = results.find((r) => r.status === 200)
    expect((await flagsOf(h, p.production).get(key)).body).toMatchObject(winner?.body.flags[0].flag)
  })

  it('a prerequisite must be in the target or promoted along (422 naming it otherwise)', async () => {
    const [base, child] = [unique('base'), unique('child')]
    await putFlag(h, p.staging, { key: base, is_enabled: true })
    await putFlag(h, p.staging, { key: child, is_enabled: true, prerequisites: [{ flag_key: base }] })
    const before = await snapshotOfDatabase(h)
    const alone = await promote(body([[child, null]]))
    expect(alone.status, JSON.stringify(alone.body)).toBe(422)
    expect(alone.body.issues).toEqual([
      { path: 'flags[0].prerequisites[0].flag_key', message: `no flag ${JSON.stringify(base)} in this environment` },
    ])
    expect(alone.body.error).toContain(child)
    expect(await snapshotOfDatabase(h)).toEqual(before)
    // Listed after the flag needing it, the prerequisite is still written first.
    const along = await promote(
      body([
        [child, null],
        [base, null],
      ]),
    )
    expect(along.status, JSON.stringify(along.body)).toBe(200)
    expect((await flagsOf(h, p.production).get(child)).body.prerequisites).toEqual([{ flag_key: base }])
  })

  it('into an environment requiring approval: editors create, only admins promote over a flag (403)', async () => {
    const project = await createProject(h)
    await setRequireApproval(h, project, project.production, true)
    const [fresh, existing] = [unique('fresh'), unique('existing')]
    await putFlag(h, project.staging, { key: fresh, is_enabled: true })
    await putFlag(h, project.staging, { key: existing, is_enabled: true })
    await putFlag(h, project.production, { key: existing, is_enabled: false })
    const editor = await member(h, project.id, 'editor', 'editor')
    const existingBase = await revisionIn(project.production, existing)
    const both = body(
      [
        [fresh, null],
        [existing, existingBase],
      ],
      project.staging,
      project.production,
    )
    const before = await snapshotOfDatabase(h)
    const refused = await promote(both, editor.as, project.id)
    expect(refused.status).toBe(403)
    expect(refused.body.error).toContain('promoting over an existing flag needs the project admin role')
    expect(await snapshotOfDatabase(h)).toEqual(before)
    const created = await promote(body([[fresh, null]], project.staging, project.production), editor.as, project.id)
    expect(created.status, JSON.stringify(created.body)).toBe(200)
    const asAdmin = await promote(
      body([[existing, existingBase]], project.staging, project.production),
      h.admin,
      project.id,
    )
    expect(asAdmin.status, JSON.stringify(asAdmin.body)).toBe(200)
  })

  it('viewers get 403, outsiders 404; bad bodies are 422s naming the field, and nothing is written', async () => {
    const key = unique('k')
    await putFlag(h, p.staging, { key, is_enabled: true })
    const viewer = await member(h, p.id, 'viewer', 'viewer')
    const outsider = await member(h, undefined, 'editor')
    const other = await createProject(h)
    const before = await snapshotOfDatabase(h)
    expect((await promote(body([[key, null]]), viewer.as)).status).toBe(403)
    expect((await promote(body([[key, null]]), outsider.as)).status).toBe(404)
    const many = Array.from({ length: 101 }, (_, i): [string, null] => [`k${i}`, null])
    for (const [sent, path] of [
      [{ ...body([[key, null]]), flags: [] }, 'flags'],
      [body(many), 'flags'],
      [
        body([
          [key, null],
          [key, null],
        ]),
        'flags[1].key',
      ],
      [{ ...body([]), flags: [{ key }] }, 'flags[0].base_revision'],
      [body([[key, -1]]), 'flags[0].base_revision'],
      [body([['not a key', null]]), 'flags[0].key'],
      [body([[key, null]], p.staging, p.staging), 'to_env_id'],
      [body([[key, null]], p.staging, other.production), 'to_env_id'],
      [body([[key, null]], 'nope'), 'from_env_id'],
      [body([[unique('absent'), null]]), 'flags[0].key'],
    ] as const) {
      const res = await promote(sent as Json)
      expect(res.status, JSON.stringify(sent)).toBe(422)
      expect(res.body.code).toBe('validation_failed')
      expect(res.body.issues.map((i: Json) => i.path)).toContain(path)
    }
    expect(await snapshotOfDatabase(h)).toEqual(before)
    expect((await h.call(`/api/projects/${p.id}/promote`, { as: h.admin })).status).toBe(405)
  })
})
