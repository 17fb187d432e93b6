import { DIALECTS } from '@flagsync/test-support/databases'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type Harness, type Json, startHarness } from '../harness.js'
import { createProject, flagsOf, member, type Project, putFlag, setRequireApproval, unique } from './support.js'

// POST /api/projects/:id/flags creates one flag in several environments in one transaction: all or nothing.

describe.each(DIALECTS)('creating a flag in several environments on %s', (dialect) => {
  let h: Harness
  let p: Project
  beforeAll(async () => {
    h = await startHarness(dialect)
    p = await createProject(h)
  })
  afterAll(async () => {
    await h?.dispose()
  })

  const create = (body: Json, as = h.admin, projectId = p.id) =>
    h.call(`/api/projects/${projectId}/flags`, { method: 'POST', as, body })
  const everywhere = () => [p.production, p.staging, p.development]
  /** Where the key exists now, read back through the single-environment route. */
  const presentIn = async (key: string) => {
    const out: string[] = []
    for (const env of everywhere()) if ((await flagsOf(h, env).get(key)).status === 200) out.push(env)
    return out
  }

  it('creates the flag in every listed environment, each with its revision, as an editor', async () => {
    const editor = await member(h, p.id, 'editor', 'editor')
    const key = unique('checkout')
    const res = await create(
      { flag: { key, is_enabled: true, rollout_percentage: 25 }, environment_ids: everywhere() },
      editor.as,
    )
    expect(res.status, JSON.stringify(res.body)).toBe(200)
    expect(res.body.key).toBe(key)
    expect(res.body.created.map((c: Json) => c.environment_id)).toEqual(everywhere())
    for (const c of res.body.created) {
      const read = await flagsOf(h, c.environment_id).get(key)
      expect(read.body).toEqual(c.flag)
      expect(c.flag.rollout_percentage).toBe(25)
      expect(typeof c.flag.revision).toBe('number')
    }
  })

  it('creates nothing anywhere when the key exists in one environment (409 naming it)', async () => {
    const key = unique('taken')
    await putFlag(h, p.staging, { key, is_enabled: false, description: 'kept' })
    const res = await create({ flag: { key, is_enabled: true }, environment_ids: everywhere() })
    expect(res.status).toBe(409)
    expect(res.body.code).toBe('conflict')
    expect(res.body.environments).toEqual([{ id: p.staging, name: 'Staging' }])
    expect(res.body.error).toContain('Staging')
    expect(await presentIn(key)).toEqual([p.staging])
    expect((await flagsOf(h, p.staging).get(key)).body.description).toBe('kept')
  })

  it('creates nothing anywhere when the flag does not fit one environment (422 naming it)', async () => {
    const base = unique('base')
    await putFlag(h, p.development, { key: base, is_enabled: true })
    const key = unique('dependent')
    const res = await create({
      flag: { key, is_enabled: true, prerequisites: [{ flag_key: base, required_value: true }] },
      environment_ids: [p.development, p.production],
    })
    expect(res.status).toBe(422)
    expect(res.body.error).toContain('Production')
    expect(await presentIn(key)).toEqual([])
  })

  it('creates where approval is required too: a new flag has nothing to review', async () => {
    const q = await createProject(h)
    await setRequireApproval(h, q, q.production, true)
    const editor = await member(h, q.id, 'editor', 'editor')
    const key = unique('reviewed')
    const res = await create(
      { flag: { key, is_enabled: true }, environment_ids: [q.production, q.staging] },
      editor.as,
      q.id,
    )
    expect(res.status, JSON.stringify(res.body)).toBe(200)
    expect((await flagsOf(h, q.production).get(key)).status).toBe(200)
  })

  it('refuses viewers, environments of other projects, and bad bodies, creating nothing', async () => {
    const key = unique('refused')
    const viewer = await member(h, p.id, 'editor', 'viewer')
    expect((await create({ flag: { key, is_enabled: true }, environment_ids: everywhere() }, viewer.as)).status).toBe(
      403,
    )
    const other = await createProject(h)
    const foreign = await create({
      flag: { key, is_enabled: true },
      environment_ids: [p.development, other.development],
    })
    expect(foreign.status).toBe(422)
    expect(foreign.body.issues[0].path).toBe('environment_ids')
    expect((await create({ flag: { key, is_enabled: true }, environment_ids: [] })).status).toBe(422)
    expect((await create({ flag: { key: 'bad key!' }, environment_ids: everywhere() })).status).toBe(422)
    expect(await presentIn(key)).toEqual([])
    expect((await flagsOf(h, other.development).get(key)).status).toBe(404)
  })
})
