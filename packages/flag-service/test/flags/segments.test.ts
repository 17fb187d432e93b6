import { evaluate } from '@flagsync/evaluation'
import { TABLES } from '@flagsync/store'
import { DIALECTS } from '@flagsync/test-support/databases'
import type { SseReader } from '@flagsync/test-support/sse-reader'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { flagStreamsOf, sweepOrphanSegments } from '../../src/flags/index.js'
import { type Caller, type Harness, type Json, startHarness, T0 } from '../harness.js'
import {
  bootstrapOf,
  createProject,
  flagsOf,
  keyHeader,
  member,
  openStream,
  parsed,
  putFlag,
  sdkKeyFor,
  setRequireApproval,
  snapshotOfDatabase,
} from './support.js'

const BETA = {
  key: 'beta',
  name: 'Beta testers',
  description: 'opted in',
  rules: [
    { attribute: 'email', operator: 'ends_with', values: ['@example.com'] },
    { attribute: 'plan', operator: 'equals', values: ['beta', 'staff'] },
  ],
}

describe.each(DIALECTS)('segments on %s', (dialect) => {
  let h: Harness
  const readers: SseReader[] = []
  const segments = (projectId: string, as: Caller = h.admin) => {
    const base = `/api/projects/${projectId}/segments`
    return {
      list: () => h.call(base, { as }),
      get: (key: string) => h.call(`${base}/${key}`, { as }),
      create: (body: Json) => h.call(base, { method: 'POST', as, body }),
      patch: (key: string, body: Json) => h.call(`${base}/${key}`, { method: 'PATCH', as, body }),
      delete: (key: string) => h.call(`${base}/${key}`, { method: 'DELETE', as }),
    }
  }
  const stream = async (key: string) => {
    const reader = await openStream(h, keyHeader(key))
    readers.push(reader)
    return { reader, boot: await bootstrapOf(reader) }
  }
  beforeAll(async () => {
    h = await startHarness(dialect)
  })
  afterEach(() => {
    for (const r of readers.splice(0)) r.close()
  })
  afterAll(async () => {
    await h?.dispose()
  })

  it('CRUD under a project: 200 create, 409 duplicate, list, read with used_by, merge PATCH, 404s, 422s', async () => {
    const p = await createProject(h)
    const api = segments(p.id)
    const created = await api.create(BETA)
    expect(created.status).toBe(200)
    const at = new Date(T0).toISOString()
    expect(created.body).toEqual({ ...BETA, created_at: at, updated_at: at })
    expect((await api.create(BETA)).status).toBe(409)
    expect((await api.create({ key: 'empty', name: 'Nobody yet' })).body).toMatchObject({
      rules: [],
      description: null,
    })
    expect(((await api.list()).body as Json[]).map((s) => s.key)).toEqual(['beta', 'empty'])
    expect((await api.get('beta')).body).toEqual({ ...created.body, used_by: [] })

    h.clock.advance(1000)
    const patched = await api.patch('beta', { name: 'Beta', rules: [BETA.rules[0]] })
    expect(patched.status).toBe(200)
    expect(patched.body).toEqual({
      ...BETA,
      name: 'Beta',
      rules: [BETA.rules[0]],
      created_at: at,
      updated_at: new Date(T0 + 1000).toISOString(),
    })

    const before = await snapshotOfDatabase(h)
    expect((await api.get('nope')).status).toBe(404)
    expect((await api.patch('nope', { name: 'x' })).status).toBe(404)
    expect((await api.delete('nope')).status).toBe(404)
    expect((await api.get('bad key')).status).toBe(404)
    expect((await api.create({ key: 'bad key', name: 'x' })).status).toBe(422)
    expect((await api.create({ key: 'k', name: '' })).status).toBe(422)
    // A name follows the service's rule for names: no control characters (NUL included) on either dialect.
    expect((await api.create({ key: 'k', name: 'a\u0000b' })).body.issues).toEqual([
      { path: 'name', message: 'must not contain control characters or unpaired surrogates' },
    ])
    expect((await api.patch('beta', { name: 'a\nb' })).status).toBe(422)
    // ...and no bidirectional override, which would reverse the rest of a history sentence naming the segment.
    expect((await api.patch('beta', { name: 'staff \u202Eevil' })).body.issues).toEqual([
      expect.objectContaining({ path: 'name', message: expect.stringMatching(/bidirectional/) }),
    ])
    expect((await api.create({ key: 'k', name: 'x', rules: [{ segment_key: 'beta' }] })).status).toBe(422)
    expect(
      (await api.create({ key: 'k', name: 'x', rules: [{ attribute: 'a', operator: 'equals', values: [] }] })).status,
    ).toBe(422)
    expect((await api.patch('beta', {})).status).toBe(422)
    expect((await api.patch('beta', { key: 'other' })).status).toBe(422)
    expect((await h.call(`/api/projects/${p.id}/segments/beta`, { method: 'POST', as: h.admin })).status).toBe(405)
    expect(await snapshotOfDatabase(h)).toEqual(before)

    // Invisible projects are 404s; viewers read and cannot write.
    const other = await createProject(h)
    const outsider = await member(h, other.id, 'editor', 'admin')
    expect((await segments(p.id, outsider.as).list()).status).toBe(404)
    const viewer = await member(h, p.id, 'editor', 'viewer')
    expect((await segments(p.id, viewer.as).get('beta')).status).toBe(200)
    expect((await segments(p.id, viewer.as).create({ key: 'v', name: 'v' })).status).toBe(403)
    expect((await segments(p.id, viewer.as).patch('beta', { name: 'v' })).status).toBe(403)
    expect((await segments(p.id, viewer.as).delete('empty')).status).toBe(403)
    expect((await segments(p.id).delete('empty')).status).toBe(204)
    expect((await api.get('empty')).status).toBe(404)
  })

  it('a segment is referenced by flags of its own project only, and cannot be deleted while in use (409 naming them)', async () => {
    const p = await createProject(h)
    const q = await createProject(h)
    await segments(p.id).create(BETA)
    const rule = { segment_key: 'beta', variant: true }
    await putFlag(h, p.production, { key: 'uses-beta', is_enabled: true, rules: [rule] })
    await putFlag(h, p.staging, { key: 'also-beta', is_enabled: true, rules: [rule] })
    const cross = await flagsOf(h, q.production).put({ key: 'x', is_enabled: true, rules: [rule] })
    expect(cross.status).toBe(422)
    expect(cross.body.issues).toEqual([{ path: 'rules[0].segment_key', message: 'no segment "beta" in this project' }])

    const usedBy = [
      { environment_id: p.production, flag_key: 'uses-beta' },
      { environment_id: p.staging, flag_key: 'also-beta' },
    ]
    expect((await segments(p.id).get('beta')).body.used_by).toEqual(usedBy)
    const refused = await segments(p.id).delete('beta')
    expect(refused.status).toBe(409)
    expect(refused.body.used_by).toEqual(usedBy)
    await flagsOf(h, p.production).patch('uses-beta', { rules: [] })
    await flagsOf(h, p.staging).delete('also-beta')
    expect((await segments(p.id).delete('beta')).status).toBe(204)
    // Segments never show up as flags of any environment.
    for (const env of [p.production, p.staging, p.development]) {
      expect(((await flagsOf(h, env).list()).body as Json[]).map((f) => f.key)).not.toContain('beta')
    }
  })

  it('expanded for SDKs (stream and snapshot), unexpanded on the dashboard; the evaluator then matches segment members', async () => {
    const p = await createProject(h)
    await segments(p.id).create(BETA)
    const flag = {
      key: 'new-ui',
      is_enabled: true,
      flag_type: 'string',
      default_value: 'old',
      disabled_value: 'off',
      rules: [
        { attribute: 'country', operator: 'equals', values: ['NL'], variant: 'dutch' },
        { segment_key: 'beta', variant: 'new' },
      ],
    }
    await putFlag(h, p.production, flag)
    expect((await flagsOf(h, p.production).get('new-ui')).body.rules).toEqual(flag.rules)
    expect((await flagsOf(h, p.production).list()).body[0].rules).toEqual(flag.rules)

    const expandedRules = [
      { attribute: 'country', operator: 'equals', values: ['NL'], variant: 'dutch' },
      { attribute: 'email', operator: 'ends_with', values: ['@example.com'], variant: 'new' },
      { attribute: 'plan', operator: 'equals', values: ['beta', 'staff'], variant: 'new' },
    ]
    const { boot } = await stream(p.sdkKey)
    const served = boot.flags[0].flag
    expect(served).toEqual({ ...(await flagsOf(h, p.production).get('new-ui')).body, rules: expandedRules })
    const snapshot = await h.call('/flags/snapshot', { headers: keyHeader(p.sdkKey) })
    expect(snapshot.body).toEqual([served])

    expect(evaluate(served, { user_id: 'u', email: 'ann@example.com' })).toEqual({
      value: 'new',
      reason: 'TARGETING_MATCH',
    })
    expect(evaluate(served, { user_id: 'u', plan: 'staff' })).toEqual({ value: 'new', reason: 'TARGETING_MATCH' })
    expect(evaluate(served, { user_id: 'u', country: 'NL', plan: 'staff' }).value).toBe('dutch')
    expect(evaluate(served, { user_id: 'u', email: 'bob@elsewhere.org', plan: 'free' })).toEqual({
      value: 'old',
      reason: 'DEFAULT',
    })
    // The unexpanded rule is one the evaluator never matches: SDKs must get the expanded form.
    const dashboard = (await flagsOf(h, p.production).get('new-ui')).body
    expect(evaluate(dashboard, { user_id: 'u', plan: 'staff' }).value).toBe('old')
  })

  it('a segment edit re-sends the flags using it to every environment’s streams, and nothing to others', async () => {
    const p = await createProject(h)
    const q = await createProject(h)
    await segments(p.id).create(BETA)
    await segments(q.id).create(BETA)
    const rule = { segment_key: 'beta', variant: false }
    await putFlag(h, p.production, { key: 'uses', is_enabled: true, rules: [rule] })
    await putFlag(h, p.production, { key: 'plain', is_enabled: true })
    await putFlag(h, p.staging, { key: 'uses-too', is_enabled: true, rules: [rule] })
    await putFlag(h, q.production, { key: 'other-project', is_enabled: true, rules: [rule] })
    const prod = await stream(p.sdkKey)
    const staging = await stream(await sdkKeyFor(h, p.id, p.staging))
    const otherProject = await stream(q.sdkKey)
    const viewer = await member(h, p.id, 'editor', 'viewer')
    const dashboard = await openStream(
      h,
      { Cookie: (viewer.as as { cookie: string }).cookie },
      `?environment_id=${p.staging}`,
    )
    readers.push(dashboard)
    await bootstrapOf(dashboard)
    const marks = [prod, staging, otherProject].map((s) => s.reader.events.length)
    const dashboardMark = dashboard.events.length

    const newRules = [{ attribute: 'team', operator: 'equals', values: ['core'] }]
    expect((await segments(p.id).patch('beta', { rules: newRules })).status).toBe(200)
    const resent = [{ attribute: 'team', operator: 'equals', values: ['core'], variant: false }]
    await prod.reader.waitFor(() => true, 5000, marks[0])
    await staging.reader.waitFor(() => true, 5000, marks[1])
    await dashboard.waitFor(() => true, 5000, dashboardMark)

    // A rename changes nothing SDKs evaluate: not re-sent. Sentinels then prove what each stream got.
    expect((await segments(p.id).patch('beta', { name: 'Renamed' })).status).toBe(200)
    await putFlag(h, p.production, { key: 'z-sentinel', is_enabled: true })
    await putFlag(h, p.staging, { key: 'z-sentinel', is_enabled: true })
    await putFlag(h, q.production, { key: 'z-sentinel', is_enabled: true })
    for (const s of [prod, staging, otherProject]) await s.reader.waitFor((e) => e.data.includes('z-sentinel'), 5000)
    const summary = (reader: SseReader, from: number) =>
      parsed(reader, from).map(([, d]) => [d.env_id, d.flag.key, d.flag.rules])
    expect(summary(prod.reader, marks[0] as number)).toEqual([
      [p.production, 'uses', resent],
      [p.production, 'z-sentinel', []],
    ])
    expect(summary(staging.reader, marks[1] as number)).toEqual([
      [p.staging, 'uses-too', resent],
      [p.staging, 'z-sentinel', []],
    ])
    expect(summary(otherProject.reader, marks[2] as number)).toEqual([[q.production, 'z-sentinel', []]])
    await dashboard.waitFor((e) => e.data.includes('z-sentinel'), 5000, dashboardMark)
    expect(summary(dashboard, dashboardMark)).toEqual([
      [p.staging, 'uses-too', resent],
      [p.staging, 'z-sentinel', []],
    ])
    // A new connection gets the new expansion too.
    const fresh = await stream(p.sdkKey)
    expect(fresh.boot.flags.find((u) => u.flag.key === 'uses').flag.rules).toEqual(resent)
  })

  it('an emptied segment matches nobody: its rules vanish from the expanded flag', async () => {
    const p = await createProject(h)
    await segments(p.id).create(BETA)
    await putFlag(h, p.production, { key: 'f', is_enabled: true, rules: [{ segment_key: 'beta', variant: false }] })
    await segments(p.id).patch('beta', { rules: [] })
    const snapshot = await h.call('/flags/snapshot', { headers: keyHeader(p.sdkKey) })
    expect(snapshot.body[0].rules).toEqual([])
    expect(evaluate(snapshot.body[0], { email: 'a@example.com' }).value).toBe(true)
  })

  it('editors cannot change the rules of a segment used where approval is required (403); admins can', async () => {
    const p = await createProject(h)
    const editor = await member(h, p.id, 'editor', 'editor')
    await segments(p.id).create(BETA)
    await putFlag(h, p.production, { key: 'f', is_enabled: true, rules: [{ segment_key: 'beta' }] })
    await setRequireApproval(h, p, p.production, true)
    expect((await segments(p.id, editor.as).patch('beta', { rules: [] })).status).toBe(403)
    expect((await segments(p.id, editor.as).patch('beta', { description: 'fine' })).status).toBe(200)
    expect((await segments(p.id).patch('beta', { rules: [] })).status).toBe(200)
  })

  it('deleting a project removes its segments at once, through the change log', async () => {
    const p = await createProject(h)
    await segments(p.id).create(BETA)
    await segments(p.id).create({ ...BETA, key: 'gamma' })
    const knex = h.server.runtime.knex
    const rows = () => knex(TABLES.flags).where('scope', `seg:${p.id}`).select('key')
    expect(await rows()).toHaveLength(2)
    const before = await knex(TABLES.changes).where('scope', `seg:${p.id}`).count({ n: '*' }).first()
    expect((await h.call(`/api/projects/${p.id}`, { method: 'DELETE', as: h.admin })).status).toBe(204)
    expect(await rows()).toEqual([])
    const after = await knex(TABLES.changes).where('scope', `seg:${p.id}`).count({ n: '*' }).first()
    expect(Number(after?.n) - Number(before?.n)).toBe(2) // two deletions every instance will follow
    expect(flagStreamsOf(h.server.runtime).live.size(`seg:${p.id}`)).toBe(0)
    expect(await sweepOrphanSegments(h.server.runtime)).toBe(0)
  })

  it('the start-up and hourly sweep still removes segments left without a project', async () => {
    const orphan = 'seg:00000000-0000-4000-8000-000000000000'
    await h.server.runtime.write(async (_trx, flags) => flags.put({ key: 'lost', name: 'Lost', rules: [] }, orphan))
    expect(await sweepOrphanSegments(h.server.runtime)).toBe(1)
    expect(await h.server.runtime.knex(TABLES.flags).where('scope', orphan).select('key')).toEqual([])
  })
})
