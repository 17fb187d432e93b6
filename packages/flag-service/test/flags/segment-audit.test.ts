import { serviceAuditPageSchema } from '@flagsync/protocol'
import { DIALECTS } from '@flagsync/test-support/databases'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type Caller, type Harness, type Json, startHarness } from '../harness.js'
import { createProject, flagsOf, member, type Project, putFlag } from './support.js'

const BETA = {
  key: 'beta',
  name: 'Beta testers',
  rules: [{ attribute: 'email', operator: 'ends_with', values: ['@a.io'] }],
}
const EVERYONE = [{ attribute: 'email', operator: 'ends_with', values: [''] }]
const BETA_RULE = { segment_key: 'beta', variant: true }

/** Segment writes in the audit routes: the project's and environment's changes, and the history of flags using them. */
describe.each(DIALECTS)('segment changes in the flag service audit trail on %s', (dialect) => {
  let h: Harness
  let p: Project
  let editor: { as: Caller; email: string }
  const page = async (path: string) => {
    const res = await h.call(path, { as: h.admin })
    expect(res.status, JSON.stringify(res.body)).toBe(200)
    expect(serviceAuditPageSchema.safeParse(res.body).success, JSON.stringify(res.body)).toBe(true)
    return res.body as { entries: Json[]; nextCursor: string | null }
  }
  const history = (env: string, key: string, query = '') =>
    page(`/api/environments/${env}/flags/${key}/history${query}`)
  const patchSegment = async (body: Json) => {
    const res = await h.call(`/api/projects/${p.id}/segments/beta`, { method: 'PATCH', as: editor.as, body })
    expect(res.status, JSON.stringify(res.body)).toBe(200)
  }
  const segmentEntries = (entries: Json[]) => entries.filter((e) => e.collection === 'segments')

  beforeAll(async () => {
    h = await startHarness(dialect)
    p = await createProject(h)
    editor = await member(h, p.id, 'editor', 'editor')
    const created = await h.call(`/api/projects/${p.id}/segments`, { method: 'POST', as: h.admin, body: BETA })
    expect(created.status).toBe(200)
    await putFlag(h, p.production, { key: 'uses-beta', is_enabled: true, rules: [BETA_RULE] })
    await putFlag(h, p.production, { key: 'plain', is_enabled: true })
    await putFlag(h, p.staging, { key: 'joins-later', is_enabled: true })
    await patchSegment({ rules: EVERYONE })
    // Uses the segment only from here on: the change above is not in its history, the one below is.
    expect((await flagsOf(h, p.staging).patch('joins-later', { rules: [BETA_RULE] })).status).toBe(200)
    await patchSegment({ description: 'everyone now' })
  })
  afterAll(async () => {
    await h?.dispose()
  })

  it('a segment PATCH is in the project’s changes: collection segments, no environment, who and which route', async () => {
    const { entries } = await page(`/api/projects/${p.id}/changes`)
    const [newest, rules, created] = segmentEntries(entries)
    expect(newest).toMatchObject({ key: 'beta', action: 'update', changedFields: ['description'] })
    expect(rules).toMatchObject({
      collection: 'segments',
      environment_id: null,
      key: 'beta',
      action: 'update',
      changedFields: ['rules'],
      before: expect.objectContaining({ rules: BETA.rules }),
      after: expect.objectContaining({ rules: EVERYONE }),
      actor: { name: editor.email, verified: true },
      source: { type: 'api', route: 'PATCH /api/projects/:project_id/segments/:key' },
    })
    expect(created).toMatchObject({ key: 'beta', action: 'create', actor: { name: 'admin@example.com' } })
    expect(entries.find((e) => e.key === 'plain')).toMatchObject({ collection: 'flags', environment_id: p.production })
    // The environments' changes list the project's segments too.
    for (const env of [p.production, p.development]) {
      const changes = await page(`/api/environments/${env}/changes`)
      expect(segmentEntries(changes.entries).map((e) => e.revision)).toEqual([
        newest.revision,
        rules.revision,
        created.revision,
      ])
    }
  })

  it('a flag’s history lists the changes of the segments its rules referenced then, and only those', async () => {
    const uses = (await history(p.production, 'uses-beta')).entries
    expect(uses.map((e) => `${e.collection}:${e.key}:${e.action}`)).toEqual([
      'segments:beta:update',
      'segments:beta:update',
      'flags:uses-beta:create',
    ])
    expect(uses[1]).toMatchObject({ environment_id: null, after: expect.objectContaining({ rules: EVERYONE }) })
    expect(segmentEntries((await history(p.production, 'plain')).entries)).toEqual([])
    const joins = (await history(p.staging, 'joins-later')).entries
    expect(joins.map((e) => `${e.collection}:${e.action}`)).toEqual(['segments:update', 'flags:update', 'flags:create'])
    expect(joins[0]?.changedFields).toEqual(['description'])
  })

  it('pages a flag’s history with segment entries by revision: limit, cursor and since', async () => {
    const all = (await history(p.production, 'uses-beta')).entries.map((e) => e.revision)
    const first = await history(p.production, 'uses-beta', '?limit=1')
    expect(first.entries.map((e) => e.revision)).toEqual(all.slice(0, 1))
    const second = await history(p.production, 'uses-beta', `?limit=1&cursor=${first.nextCursor}`)
    expect(second.entries.map((e) => e.revision)).toEqual(all.slice(1, 2))
    const third = await history(p.production, 'uses-beta', `?limit=1&cursor=${second.nextCursor}`)
    expect(third.entries.map((e) => e.revision)).toEqual(all.slice(2))
    expect(third.nextCursor).toBeNull()
    // Only the newest segment change is above the one before it; the flag's own state below `since` still counts.
    const since = await history(p.production, 'uses-beta', `?since=${all[1]}`)
    expect(since.entries.map((e) => e.revision)).toEqual(all.slice(0, 1))
  })
})
