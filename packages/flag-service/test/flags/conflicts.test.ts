import { conflictBodySchema } from '@flagsync/protocol'
import { DIALECTS } from '@flagsync/test-support/databases'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { bearer, type Caller, type Harness, type Json, startHarness } from '../harness.js'
import {
  bootstrapOf,
  createProject,
  flagsOf,
  keyHeader,
  member,
  openStream,
  type Project,
  putFlag,
  served,
  setRequireApproval,
  snapshotOfDatabase,
  storeRevision,
} from './support.js'

/**
 * Conflicts on the flag service: the read-only `revision`, PATCH/DELETE with a
 * base revision (If-Match or base_revision) under the receiver's three-way
 * rules, and change requests whose flag changed after they were filed.
 */
describe.each(DIALECTS)('flag revisions and conflicts on %s', (dialect) => {
  let h: Harness
  let p: Project
  let n = 0
  const fresh = async (env: string, flag: Json = {}) => {
    const key = `c-${++n}`
    await putFlag(h, env, { key, is_enabled: false, rollout_percentage: 10, description: 'start', ...flag })
    return { key, revision: await storeRevision(h.server.runtime.knex, env, key) }
  }
  const patch = (env: string, key: string, body: Json, headers: Record<string, string> = {}, as: Caller = h.admin) =>
    h.call(`/api/environments/${env}/flags/${key}`, { method: 'PATCH', as, body, headers })
  const ifMatch = (revision: number) => ({ 'If-Match': `"${revision}"` })

  beforeAll(async () => {
    h = await startHarness(dialect)
    p = await createProject(h)
  })
  afterAll(async () => {
    await h?.dispose()
  })

  it('every flag carries its revision; GET → edit → POST with the revision round-trips, and it is never stored', async () => {
    const { key, revision } = await fresh(p.production)
    const got = await flagsOf(h, p.production).get(key)
    expect(got.body.revision).toBe(revision)
    expect(got.res.headers.get('etag')).toBe(`"${revision}"`)
    expect(((await flagsOf(h, p.production).list()).body as Json[]).find((f) => f.key === key).revision).toBe(revision)
    const edited = await flagsOf(h, p.production).put({ ...got.body, description: 'edited' })
    expect(edited.status, JSON.stringify(edited.body)).toBe(200)
    expect(edited.body.revision).toBeGreaterThan(revision)
    expect(edited.body).toEqual(await served(h, p.production, { ...got.body, description: 'edited' }))
    const patched = await patch(p.production, key, { revision: 1, description: 'patched' })
    expect(patched.status).toBe(200)
    expect(patched.body.revision).toBe(await storeRevision(h.server.runtime.knex, p.production, key))
    const row = await h.server.runtime.knex('flagsync_flags').where({ scope: p.production, key }).first('data')
    expect(JSON.parse(row.data)).not.toHaveProperty('revision')
  })

  it('the snapshot and the streams carry each flag’s own revision, also when a segment it uses changes', async () => {
    const seg = `seg-${++n}`
    const created = await h.call(`/api/projects/${p.id}/segments`, {
      method: 'POST',
      as: h.admin,
      body: { key: seg, name: 'S', rules: [{ attribute: 'plan', operator: 'equals', values: ['pro'] }] },
    })
    expect(created.status).toBe(200)
    const { key, revision } = await fresh(p.production, { rules: [{ segment_key: seg, variant: true }] })
    const snapshot = await h.call('/flags/snapshot', { headers: keyHeader(p.sdkKey) })
    expect((snapshot.body as Json[]).find((f) => f.key === key).revision).toBe(revision)
    const stream = await openStream(h, keyHeader(p.sdkKey))
    try {
      const boot = await bootstrapOf(stream)
      expect(boot.flags.find((u) => u.flag.key === key).flag.revision).toBe(revision)
      const seen = stream.events.length
      const changed = await h.call(`/api/projects/${p.id}/segments/${seg}`, {
        method: 'PATCH',
        as: h.admin,
        body: { rules: [{ attribute: 'plan', operator: 'equals', values: ['team'] }] },
      })
      expect(changed.status).toBe(200)
      const event = await stream.waitFor(() => true, 5000, seen)
      const update = JSON.parse(event.data)
      expect(update.flag.key).toBe(key)
      expect(update.flag.rules[0].values).toEqual(['team']) // expanded
      expect(update.flag.revision).toBe(revision) // the flag did not change …
      expect(Number(event.id)).toBeGreaterThan(revision) // … the segment did
    } finally {
      stream.close()
    }
  })

  it('If-Match: unchanged applies; another field changed merges; the same field changed is a 409 with the receiver body, nothing applied', async () => {
    const { key, revision } = await fresh(p.production)
    // Unchanged since the base.
    const first = await patch(p.production, key, { rollout_percentage: 20 }, ifMatch(revision))
    expect(first.status, JSON.stringify(first.body)).toBe(200)
    // Someone else changed rollout since `revision`; this edit sets description only: merged.
    const merged = await patch(p.production, key, { description: 'mine' }, ifMatch(revision))
    expect(merged.status).toBe(200)
    expect(merged.body).toMatchObject({ rollout_percentage: 20, description: 'mine' })
    // Both changed rollout_percentage, to different values: a conflict.
    const before = await snapshotOfDatabase(h)
    const clash = await patch(p.production, key, { rollout_percentage: 90, is_enabled: true }, ifMatch(revision))
    expect(clash.status).toBe(409)
    expect(conflictBodySchema.safeParse(clash.body).success).toBe(true)
    const current = await storeRevision(h.server.runtime.knex, p.production, key)
    expect(clash.body.conflicts).toEqual([
      {
        operationIndex: 0,
        collection: 'flags',
        recordId: key,
        kind: 'field',
        fields: ['rollout_percentage'],
        base: expect.objectContaining({ key, rollout_percentage: 10, description: 'start' }),
        current: expect.objectContaining({ key, rollout_percentage: 20, description: 'mine' }),
        currentRevision: current,
        reason: expect.stringContaining('rollout_percentage'),
      },
    ])
    expect(await snapshotOfDatabase(h)).toEqual(before)
    // The same value as theirs is no conflict; base_revision in the body works like If-Match.
    const same = await patch(p.production, key, { rollout_percentage: 20, base_revision: revision })
    expect(same.status).toBe(200)
    const body = await patch(p.production, key, { rollout_percentage: 30, base_revision: revision })
    expect(body.status).toBe(409)
  })

  it('kind deleted for an edit of a flag deleted since the base; DELETE with If-Match refuses to drop others’ changes', async () => {
    const gone = await fresh(p.production)
    expect((await flagsOf(h, p.production).delete(gone.key)).status).toBe(204)
    const edit = await patch(p.production, gone.key, { is_enabled: true }, ifMatch(gone.revision))
    expect(edit.status).toBe(409)
    expect(edit.body.conflicts[0]).toMatchObject({ kind: 'deleted', fields: ['is_enabled'], current: null })

    const kept = await fresh(p.production)
    expect((await patch(p.production, kept.key, { description: 'theirs' })).status).toBe(200)
    const del = await h.call(`/api/environments/${p.production}/flags/${kept.key}`, {
      method: 'DELETE',
      as: h.admin,
      headers: ifMatch(kept.revision),
    })
    expect(del.status).toBe(409)
    expect(del.body.conflicts[0]).toMatchObject({ kind: 'field', fields: ['description'] })
    expect((await flagsOf(h, p.production).get(kept.key)).status).toBe(200)
    const now = await storeRevision(h.server.runtime.knex, p.production, kept.key)
    const ok = await h.call(`/api/environments/${p.production}/flags/${kept.key}`, {
      method: 'DELETE',
      as: h.admin,
      headers: ifMatch(now),
    })
    expect(ok.status).toBe(204)
  })

  it('POST replace and promote take If-Match too: replacing what others changed since is a 409 that changes nothing', async () => {
    const api = flagsOf(h, p.production)
    const { key, revision } = await fresh(p.production)
    const got = (await api.get(key)).body
    expect((await patch(p.production, key, { rollout_percentage: 30 })).status).toBe(200)
    // A stale GET → edit → POST: the replacement would put rollout back to 10.
    const stale = await h.call(`/api/environments/${p.production}/flags`, {
      method: 'POST',
      as: h.admin,
      body: { ...got, description: 'mine' },
      headers: ifMatch(revision),
    })
    expect(stale.status, JSON.stringify(stale.body)).toBe(409)
    expect(conflictBodySchema.parse(stale.body).conflicts[0]).toMatchObject({
      recordId: key,
      fields: ['rollout_percentage'],
    })
    expect((await api.get(key)).body).toMatchObject({ rollout_percentage: 30, description: 'start' })
    // The same with base_revision in the body; and with the current revision it applies.
    const inBody = await api.put({ ...got, description: 'mine', base_revision: revision })
    expect(inBody.status).toBe(409)
    const current = (await api.get(key)).body
    const fresh200 = await api.put({ ...current, description: 'mine', base_revision: current.revision })
    expect(fresh200.status, JSON.stringify(fresh200.body)).toBe(200)
    expect(fresh200.body).toMatchObject({ rollout_percentage: 30, description: 'mine' })

    // Promote: the base is the flag's revision in the target environment (0: there was none).
    const promote = (headers: Record<string, string>) =>
      h.call(`/api/environments/${p.production}/flags/${key}/promote`, {
        method: 'POST',
        as: h.admin,
        body: { target_env_id: p.staging },
        headers,
      })
    expect((await promote(ifMatch(0))).status).toBe(200)
    const target = await storeRevision(h.server.runtime.knex, p.staging, key)
    expect((await patch(p.staging, key, { description: 'staging only' })).status).toBe(200)
    const over = await promote(ifMatch(target))
    expect(over.status, JSON.stringify(over.body)).toBe(409)
    expect((await flagsOf(h, p.staging).get(key)).body.description).toBe('staging only')
    const now = await storeRevision(h.server.runtime.knex, p.staging, key)
    expect((await promote(ifMatch(now))).status).toBe(200)
    expect((await flagsOf(h, p.staging).get(key)).body.description).toBe('mine')

    // Deleted since the base: a replacement or a promotion would bring back what a colleague deleted.
    const before = (await api.get(key)).body
    const inStaging = await storeRevision(h.server.runtime.knex, p.staging, key)
    expect(
      (await h.call(`/api/environments/${p.production}/flags/${key}`, { method: 'DELETE', as: h.admin })).status,
    ).toBe(204)
    expect(
      (await h.call(`/api/environments/${p.staging}/flags/${key}`, { method: 'DELETE', as: h.admin })).status,
    ).toBe(204)
    const revived = await api.put({ ...before, base_revision: before.revision })
    expect(revived.status, JSON.stringify(revived.body)).toBe(409)
    expect(revived.body.conflicts[0]).toMatchObject({ kind: 'deleted' })
    expect((await api.get(key)).status).toBe(404)
    expect((await api.put({ ...before, description: 'back' })).status).toBe(200) // no base: a plain create
    const promoted = await promote(ifMatch(inStaging))
    expect(promoted.status, JSON.stringify(promoted.body)).toBe(409)
    expect(promoted.body.conflicts[0]).toMatchObject({ kind: 'deleted' })
    expect((await flagsOf(h, p.staging).get(key)).status).toBe(404)
  })

  it('an If-Match the store never issued (a client of a restored database) is a conflict, not a blind write', async () => {
    const { key, revision } = await fresh(p.production)
    expect((await patch(p.production, key, { rollout_percentage: 20 }, ifMatch(revision))).status).toBe(200)
    const ahead = ifMatch(99_999_999)
    const before = await snapshotOfDatabase(h)
    const clash = await patch(p.production, key, { rollout_percentage: 90 }, ahead)
    expect(clash.status).toBe(409)
    expect(clash.body.conflicts[0]).toMatchObject({
      kind: 'field',
      fields: ['rollout_percentage'],
      base: null,
      reason: expect.stringContaining('revision 99999999 was never issued here'),
    })
    const del = await h.call(`/api/environments/${p.production}/flags/${key}`, {
      method: 'DELETE',
      as: h.admin,
      headers: ahead,
    })
    expect(del.status).toBe(409)
    expect(await snapshotOfDatabase(h)).toEqual(before)
    // Setting the value already there loses nothing.
    expect((await patch(p.production, key, { rollout_percentage: 20 }, ahead)).status).toBe(200)
  })

  it('422 for a malformed If-Match or base_revision, or both disagreeing', async () => {
    const { key, revision } = await fresh(p.production)
    for (const [body, headers, path] of [
      [{ is_enabled: true }, { 'If-Match': 'yesterday' }, 'headers.if-match'],
      [{ is_enabled: true, base_revision: -1 }, {}, 'base_revision'],
      [{ is_enabled: true, base_revision: '3' }, {}, 'base_revision'],
      [{ is_enabled: true, base_revision: revision + 1 }, ifMatch(revision), 'base_revision'],
    ] as const) {
      const res = await patch(p.production, key, body, headers)
      expect(res.status, JSON.stringify(body)).toBe(422)
      expect(res.body.issues[0].path).toBe(path)
    }
    // `*` is "any revision": no check.
    expect((await patch(p.production, key, { is_enabled: true }, { 'If-Match': '*' })).status).toBe(200)
  })

  it('parallel PATCHes with the same If-Match: exactly one wins, the others are 409 and changed nothing', async () => {
    const { key, revision } = await fresh(p.production)
    const results = await Promise.all(
      Array.from({ length: 8 }, (_, i) => patch(p.production, key, { rollout_percentage: 50 + i }, ifMatch(revision))),
    )
    const won = results.filter((r) => r.status === 200)
    expect(won).toHaveLength(1)
    expect(results.filter((r) => r.status === 409)).toHaveLength(7)
    const flag = (await flagsOf(h, p.production).get(key)).body
    expect(flag.rollout_percentage).toBe(won[0]?.body.rollout_percentage)
    // One write after the base, the winner's.
    const history = await h.call(`/api/environments/${p.production}/flags/${key}/history`, { as: h.admin })
    expect(history.body.entries.filter((e: Json) => e.revision > revision)).toHaveLength(1)
    expect(history.body.entries[0].revision).toBe(flag.revision)
  })

  it('change requests: filed against the flag’s revision, marked stale when it changes; approving a conflicting one needs force', async () => {
    await setRequireApproval(h, p, p.staging, true)
    const requester = await member(h, p.id, 'editor', 'editor')
    const reviewer = await member(h, p.id, 'editor', 'editor')
    const { key, revision } = await fresh(p.staging)
    const base = `/api/environments/${p.staging}/change-requests`
    const file = async (body: Json) => {
      const res = await patch(p.staging, key, body, {}, requester.as)
      expect(res.status, JSON.stringify(res.body)).toBe(202)
      return res.body as Json
    }
    const disjoint = await file({ is_enabled: true })
    const clashing = await file({ rollout_percentage: 60 })
    const clashing2 = await file({ rollout_percentage: 61 })
    expect(disjoint).toMatchObject({ base_revision: revision, stale: false })

    // An admin changes rollout directly (POST replaces; admins may bypass approval).
    await putFlag(h, p.staging, { key, is_enabled: false, rollout_percentage: 25, description: 'start' })
    // Filing with a base that conflicts is a 409 like an applied PATCH (nothing filed).
    expect((await patch(p.staging, key, { rollout_percentage: 70 }, ifMatch(revision), requester.as)).status).toBe(409)
    const list = (await h.call(`${base}?status=pending`, { as: reviewer.as })).body as Json[]
    expect(list.filter((r) => r.flag_key === key).map((r) => r.stale)).toEqual([true, true, true])
    expect((await h.call(`${base}/${clashing.id}`, { as: reviewer.as })).body.stale).toBe(true)

    // Disjoint fields: approved, applied to the flag as it is now (the flag service's change request model).
    const ok = await h.call(`${base}/${disjoint.id}/approve`, { method: 'POST', as: reviewer.as })
    expect(ok.status, JSON.stringify(ok.body)).toBe(200)
    expect(ok.body).toMatchObject({ is_enabled: true, rollout_percentage: 25 })
    expect(ok.body.revision).toBe(await storeRevision(h.server.runtime.knex, p.staging, key))

    // The request's own field changed meanwhile: 409 with the conflict, still pending.
    const before = await snapshotOfDatabase(h)
    const refused = await h.call(`${base}/${clashing.id}/approve`, { method: 'POST', as: reviewer.as })
    expect(refused.status).toBe(409)
    expect(refused.body).toMatchObject({ code: 'conflict', stale: true, change_request_id: clashing.id })
    expect(refused.body.conflicts[0]).toMatchObject({
      recordId: key,
      kind: 'field',
      fields: ['rollout_percentage'],
      base: expect.objectContaining({ rollout_percentage: 10 }),
      current: expect.objectContaining({ rollout_percentage: 25 }),
    })
    expect(await snapshotOfDatabase(h)).toEqual(before)
    expect(
      (await h.call(`${base}/${clashing.id}/approve?force=maybe`, { method: 'POST', as: reviewer.as })).status,
    ).toBe(422)
    expect(
      (await h.call(`${base}/${clashing.id}/approve`, { method: 'POST', as: reviewer.as, body: { force: 'yes' } }))
        .status,
    ).toBe(422)
    // ?force and body force that disagree: 422 naming force, nothing applied (neither one may win silently).
    for (const [query, force] of [
      ['true', false],
      ['false', true],
    ] as const) {
      const contradictory = await h.call(`${base}/${clashing.id}/approve?force=${query}`, {
        method: 'POST',
        as: reviewer.as,
        body: { force },
      })
      expect(contradictory.status).toBe(422)
      expect(contradictory.body).toMatchObject({
        code: 'validation_failed',
        issues: [{ path: 'force', message: `differs from ?force=${query}; send one of them` }],
      })
    }
    expect(await snapshotOfDatabase(h)).toEqual(before)
    // Forced (query or body): applied.
    const forced = await h.call(`${base}/${clashing.id}/approve?force=true`, { method: 'POST', as: reviewer.as })
    expect(forced.status).toBe(200)
    expect(forced.body.rollout_percentage).toBe(60)
    expect((await h.call(`${base}/${clashing2.id}/approve`, { method: 'POST', as: reviewer.as })).status).toBe(409)
    // Both, agreeing: as one of them (not forced here, so still the conflict).
    const notForced = await h.call(`${base}/${clashing2.id}/approve?force=false`, {
      method: 'POST',
      as: reviewer.as,
      body: { force: false },
    })
    expect(notForced.status).toBe(409)
    const bodyForced = await h.call(`${base}/${clashing2.id}/approve`, {
      method: 'POST',
      as: reviewer.as,
      body: { force: true },
    })
    expect(bodyForced.status).toBe(200)
    expect(bodyForced.body.rollout_percentage).toBe(61)
    expect(
      (await h.call(`${base}?status=pending`, { as: reviewer.as })).body.filter((r: Json) => r.flag_key === key),
    ).toEqual([])
  })

  it('writes record who made them and through what; the SDK key and a token are named', async () => {
    const editor = await member(h, p.id, 'editor', 'editor')
    const token = await h.createToken(editor.as, 'read_write')
    const { key } = await fresh(p.development)
    expect((await patch(p.development, key, { is_enabled: true }, {}, bearer(token))).status).toBe(200)
    expect((await patch(p.development, key, { is_enabled: false }, {}, bearer(p.sdkKey))).status).toBe(200)
    expect(
      (await patch(p.development, key, { description: 'x' }, { 'X-Flagsync-Actor': 'Ada%20on%20a%20train' }, editor.as))
        .status,
    ).toBe(200)
    const history = await h.call(`/api/environments/${p.development}/flags/${key}/history`, { as: editor.as })
    expect(history.status).toBe(200)
    const [declared, byKey, byToken, created] = history.body.entries as Json[]
    expect(created).toMatchObject({
      action: 'create',
      environment_id: p.development,
      actor: { name: 'admin@example.com', verified: true },
      source: { type: 'api', route: 'POST /api/environments/:env_id/flags' },
    })
    expect(byToken).toMatchObject({
      action: 'update',
      changedFields: ['is_enabled'],
      actor: { name: `${editor.email} (token "read_write token")`, verified: true },
      source: { type: 'api', route: 'PATCH /api/environments/:env_id/flags/:key' },
    })
    expect(byKey.actor.name).toMatch(/^SDK key ".+" \(sk_live_/)
    expect(declared).toMatchObject({
      actor: { name: editor.email },
      declaredActor: { name: 'Ada on a train', verified: false },
    })
  })
})
