import { DIALECTS } from '@flagsync/test-support/databases'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type Caller, type Harness, type Json, startHarness } from '../harness.js'
import { createProject, member, type Project, putFlag, storeRevision } from './support.js'

// GET /api/projects/:id/compare?from=&to= lists every flag key of two environments, side by side.

describe.each(DIALECTS)('comparing two environments on %s', (dialect) => {
  let h: Harness
  let p: Project
  beforeAll(async () => {
    h = await startHarness(dialect)
    p = await createProject(h)
  })
  afterAll(async () => {
    await h?.dispose()
  })

  const compare = (query: string, as: Caller = h.admin, projectId = p.id) =>
    h.call(`/api/projects/${projectId}/compare?${query}`, { as })

  it('says per key same, different (field by field), only in from or only in to, with both revisions', async () => {
    for (const key of ['beta', 'gamma']) {
      const made = await h.call(`/api/projects/${p.id}/segments`, {
        method: 'POST',
        as: h.admin,
        body: { key, name: key },
      })
      expect(made.status, JSON.stringify(made.body)).toBe(200)
    }
    await putFlag(h, p.staging, { key: 'same', is_enabled: true, rollout_percentage: 50 })
    await putFlag(h, p.production, { key: 'same', is_enabled: true, rollout_percentage: 50 })
    await putFlag(h, p.staging, {
      key: 'differs',
      is_enabled: true,
      description: 'new',
      rules: [{ segment_key: 'beta' }],
    })
    await putFlag(h, p.production, { key: 'differs', is_enabled: false, rules: [{ segment_key: 'gamma' }] })
    await putFlag(h, p.staging, { key: 'staging-only', is_enabled: true })
    await putFlag(h, p.production, { key: 'production-only', is_enabled: false })

    const res = await compare(`from=${p.staging}&to=${p.production}`)
    expect(res.status, JSON.stringify(res.body)).toBe(200)
    expect(res.body.from).toEqual({ id: p.staging, name: 'Staging' })
    expect(res.body.to).toEqual({ id: p.production, name: 'Production' })
    const byKey = new Map((res.body.flags as Json[]).map((f) => [f.key, f]))
    expect(res.body.flags.map((f: Json) => [f.key, f.status])).toEqual([
      ['differs', 'different'],
      ['production-only', 'only_in_to'],
      ['same', 'same'],
      ['staging-only', 'only_in_from'],
    ])
    const knex = h.server.runtime.knex
    expect(byKey.get('same')).toEqual({
      key: 'same',
      status: 'same',
      from_revision: await storeRevision(knex, p.staging, 'same'),
      to_revision: await storeRevision(knex, p.production, 'same'),
      differences: [],
    })
    // Segment references compare as the reference, not as the segment's conditions.
    expect(byKey.get('differs')?.differences).toEqual([
      { field: 'description', from: 'new', to: null },
      { field: 'is_enabled', from: true, to: false },
      { field: 'rules', from: [{ segment_key: 'beta' }], to: [{ segment_key: 'gamma' }] },
    ])
    expect(byKey.get('staging-only')).toMatchObject({
      to_revision: null,
      from_revision: await storeRevision(knex, p.staging, 'staging-only'),
    })
    expect(byKey.get('staging-only')?.differences).toContainEqual({ field: 'is_enabled', from: true })
    expect(byKey.get('production-only')).toMatchObject({ from_revision: null })
    expect(byKey.get('production-only')?.differences).toContainEqual({ field: 'is_enabled', to: false })
  })

  it('is read by project viewers; others get 404; ids that are not environments of the project are 422s', async () => {
    const viewer = await member(h, p.id, 'viewer', 'viewer')
    expect((await compare(`from=${p.staging}&to=${p.production}`, viewer.as)).status).toBe(200)
    const outsider = await member(h, undefined, 'editor')
    expect((await compare(`from=${p.staging}&to=${p.production}`, outsider.as)).status).toBe(404)
    const other = await createProject(h)
    for (const [query, path] of [
      [`to=${p.production}`, 'from'],
      [`from=${p.staging}`, 'to'],
      [`from=${p.staging}&to=${other.production}`, 'to'],
      [`from=nope&to=${p.production}`, 'from'],
      [`from=${p.staging}&from=${p.development}&to=${p.production}`, 'from'],
      [`from=${p.staging}&to=${p.production}&differences_only=1`, 'differences_only'],
      [`form=${p.staging}&to=${p.production}`, 'form'],
    ] as const) {
      const res = await compare(query)
      expect(res.status, query).toBe(422)
      expect(res.body).toMatchObject({ code: 'validation_failed', issues: [{ path }] })
    }
    const post = await h.call(`/api/projects/${p.id}/compare`, { method: 'POST', as: h.admin, body: {} })
    expect(post.status).toBe(405)
  })
})
