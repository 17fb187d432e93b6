import { randomUUID } from 'node:crypto'
import { conflictBodySchema } from '@flagsync/protocol'
import { DIALECTS } from '@flagsync/test-support/databases'
import type { SseReader } from '@flagsync/test-support/sse-reader'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { bearer, type Caller, type Harness, type Json, startHarness } from '../harness.js'
import {
  bootstrapOf,
  changeRequestRows,
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
} from './support.js'

/**
 * The per-environment receiver: `POST /api/environments/:env_id/sync`
 * takes the flat API's sync batches as the signed-in user or a token, checks every
 * operation against the role table, files change requests where approval is
 * required and answers 409 conflicts like the flat receiver.
 */
describe.each(DIALECTS)('POST /api/environments/:env_id/sync on %s', (dialect) => {
  let h: Harness
  let p: Project
  let editor: { as: Caller; email: string }
  let viewer: { as: Caller; email: string }
  const readers: SseReader[] = []
  let n = 0
  const key = () => `s-${++n}`
  const sync = (env: string, operations: Json[], as: Caller = editor.as, batchId = randomUUID(), headers = {}) =>
    h.call(`/api/environments/${env}/sync`, { method: 'POST', as, body: { batchId, operations }, headers })
  const flag = (env: string, k: string) => flagsOf(h, env).get(k)

  beforeAll(async () => {
    h = await startHarness(dialect)
    p = await createProject(h)
    editor = await member(h, p.id, 'editor', 'editor')
    viewer = await member(h, p.id, 'editor', 'viewer')
    await setRequireApproval(h, p, p.staging, true)
  })
  afterEach(() => {
    for (const r of readers.splice(0)) r.close()
  })
  afterAll(async () => {
    await h?.dispose()
  })

  it('applies insert, update and delete in one transaction as the session user; the stream and the audit trail see them', async () => {
    const [a, b] = [key(), key()]
    await putFlag(h, p.production, { key: b, is_enabled: true })
    const stream = await openStream(h, keyHeader(p.sdkKey))
    readers.push(stream)
    await bootstrapOf(stream)
    const seen = stream.events.length
    const batchId = randomUUID()
    const res = await sync(
      p.production,
      [
        { action: 'insert', collection: 'flags', recordId: a, record: { is_enabled: false, description: 'synced' } },
        { action: 'update', collection: 'flags', recordId: a, changes: { rollout_percentage: 30, revision: 7 } },
        { action: 'delete', collection: 'flags', recordId: b },
      ],
      editor.as,
      batchId,
      { 'X-Flagsync-Actor': 'laptop' },
    )
    expect(res.status, JSON.stringify(res.body)).toBe(200)
    expect(res.body).toEqual({ batchId, applied: 3, revision: expect.any(Number), change_requests: [] })
    expect((await flag(p.production, a)).body).toMatchObject({
      key: a,
      is_enabled: false,
      description: 'synced',
      rollout_percentage: 30,
      flag_type: 'boolean',
      rules: [],
      revision: await storeRevision(h.server.runtime.knex, p.production, a),
    })
    expect((await flag(p.production, b)).status).toBe(404)
    await stream.waitFor(() => stream.events.length >= seen + 2, 5000)
    expect(stream.events.slice(seen).map((e) => JSON.parse(e.data).type)).toEqual(['UPSERT', 'DELETE'])

    const history = await h.call(`/api/environments/${p.production}/flags/${a}/history`, { as: editor.as })
    expect(history.body.entries).toHaveLength(1) // insert then update of one batch: one net change
    expect(history.body.entries[0]).toMatchObject({
      action: 'create',
      actor: { name: editor.email, verified: true },
      declaredActor: { name: 'laptop', verified: false },
      source: { type: 'sync', batchId, operationIndex: 1 },
    })

    // A replay answers duplicate and changes nothing.
    const before = await snapshotOfDatabase(h)
    const again = await sync(p.production, [{ action: 'delete', collection: 'flags', recordId: a }], editor.as, batchId)
    expect(again.body).toEqual({ batchId, applied: 0, duplicate: true, change_requests: [] })
    expect(await snapshotOfDatabase(h)).toEqual(before)
  })

  it('a session without the CSRF header, a viewer, a read_only token: 403 naming the operation, nothing applied', async () => {
    const k = key()
    await putFlag(h, p.production, { key: k, is_enabled: false })
    const readOnly = await h.createToken(editor.as, 'read_only')
    const outsider = await member(h, undefined, 'editor')
    const before = await snapshotOfDatabase(h)
    const op = { action: 'update', collection: 'flags', recordId: k, changes: { is_enabled: true } }
    const noCsrf = await sync(p.production, [op], {
      ...(editor.as as { kind: 'session'; cookie: string }),
      csrf: false,
    })
    expect(noCsrf.status).toBe(403)
    const asViewer = await sync(p.production, [op, op], viewer.as)
    expect(asViewer.status).toBe(403)
    expect(asViewer.body).toMatchObject({ code: 'forbidden', operationIndex: 0 })
    expect(asViewer.body.error).toMatch(/^operation 0: .*editor role/)
    expect((await sync(p.production, [op], bearer(readOnly))).status).toBe(403)
    expect((await sync(p.production, [op], outsider.as)).status).toBe(404)
    expect((await sync(p.production, [op], { kind: 'anonymous' })).status).toBe(401)
    // Everything but the token's last_used_at, which authenticating it records.
    const after = await snapshotOfDatabase(h)
    expect({ ...after, flagsync_tokens: [] }).toEqual({ ...before, flagsync_tokens: [] })
    // A read_write token acts as its user; the SDK key of the project is admin-equivalent.
    const token = await h.createToken(editor.as, 'read_write')
    expect((await sync(p.production, [op], bearer(token))).status).toBe(200)
    expect((await sync(p.production, [{ ...op, changes: { is_enabled: false } }], bearer(p.sdkKey))).status).toBe(200)
    expect((await h.call(`/api/environments/${p.production}/sync`, { as: editor.as })).status).toBe(405)
  })

  it('approval environments: updates become change requests (200 with their ids); a new key is created; replacing and deleting need an admin', async () => {
    const [existing, created] = [key(), key()]
    await putFlag(h, p.staging, { key: existing, is_enabled: false, rollout_percentage: 10 })
    const revision = await storeRevision(h.server.runtime.knex, p.staging, existing)
    const batchId = randomUUID()
    const ops = [
      { action: 'update', collection: 'flags', recordId: existing, changes: { is_enabled: true } },
      { action: 'insert', collection: 'flags', recordId: created, record: { is_enabled: true } },
    ]
    const res = await sync(p.staging, ops, editor.as, batchId)
    expect(res.status, JSON.stringify(res.body)).toBe(200)
    expect(res.body.change_requests).toEqual([{ operationIndex: 0, recordId: existing, id: expect.any(Number) }])
    expect((await flag(p.staging, existing)).body).toMatchObject({
      is_enabled: false,
      rollout_percentage: 10,
      revision,
    })
    expect((await flag(p.staging, created)).status).toBe(200)
    const [first] = res.body.change_requests as Json[]
    const requests = `/api/environments/${p.staging}/change-requests`
    expect((await h.call(`${requests}/${first?.id}`, { as: editor.as })).body).toMatchObject({
      flag_key: existing,
      patch: { is_enabled: true },
      requested_by: editor.email,
      status: 'pending',
      base_revision: revision,
    })
    // Only a patch is reviewed: an editor's replacing insert is a 403 naming it, as POST is; an admin replaces.
    const replace = { action: 'insert', collection: 'flags', recordId: existing, record: { is_enabled: false } }
    const refused = await sync(p.staging, [replace], editor.as)
    expect(refused.status).toBe(403)
    expect(refused.body).toMatchObject({ code: 'forbidden', operationIndex: 0 })
    expect(refused.body.error).toMatch(/requires approval: replacing a flag needs the project admin role/)
    expect((await flag(p.staging, existing)).body.revision).toBe(revision)
    expect((await sync(p.staging, [replace], h.admin)).status).toBe(200)
    expect((await flag(p.staging, existing)).body).toMatchObject({ is_enabled: false, rollout_percentage: null })
    // A replay (lost answer) learns the same requests and files none.
    const rows = (await changeRequestRows(h)).length
    const again = await sync(p.staging, ops, editor.as, batchId)
    expect(again.body).toMatchObject({ duplicate: true, change_requests: res.body.change_requests })
    expect((await changeRequestRows(h)).length).toBe(rows)
    // Approved by someone else, it applies.
    const approved = await h.call(`${requests}/${first?.id}/approve`, { method: 'POST', as: h.admin })
    expect(approved.status).toBe(200)
    expect(approved.body.is_enabled).toBe(true)

    const del = await sync(p.staging, [
      { action: 'update', collection: 'flags', recordId: created, changes: { description: 'x' } },
      { action: 'delete', collection: 'flags', recordId: created },
    ])
    expect(del.status).toBe(403)
    expect(del.body.operationIndex).toBe(1)
    expect((await changeRequestRows(h)).length).toBe(rows) // the batch's request rolled back with it
    expect(
      (await sync(p.staging, [{ action: 'delete', collection: 'flags', recordId: created }], h.admin)).status,
    ).toBe(200)
    expect((await flag(p.staging, created)).status).toBe(404)
  })

  it('baseRevision: a conflict is a 409 with the receiver’s body and nothing of the batch applied; disjoint changes merge', async () => {
    const k = key()
    await putFlag(h, p.production, { key: k, is_enabled: false, rollout_percentage: 10 })
    const base = await storeRevision(h.server.runtime.knex, p.production, k)
    await flagsOf(h, p.production).patch(k, { rollout_percentage: 20 })
    const other = key()
    const before = await snapshotOfDatabase(h)
    const res = await sync(p.production, [
      { action: 'insert', collection: 'flags', recordId: other, record: { is_enabled: true } },
      { action: 'update', collection: 'flags', recordId: k, changes: { rollout_percentage: 50 }, baseRevision: base },
    ])
    expect(res.status).toBe(409)
    expect(conflictBodySchema.safeParse(res.body).success).toBe(true)
    expect(res.body.conflicts).toEqual([
      {
        operationIndex: 1,
        collection: 'flags',
        recordId: k,
        kind: 'field',
        fields: ['rollout_percentage'],
        base: expect.objectContaining({ rollout_percentage: 10 }),
        current: expect.objectContaining({ rollout_percentage: 20 }),
        currentRevision: await storeRevision(h.server.runtime.knex, p.production, k),
        reason: expect.any(String),
      },
    ])
    expect(await snapshotOfDatabase(h)).toEqual(before)
    const merged = await sync(p.production, [
      { action: 'update', collection: 'flags', recordId: k, changes: { is_enabled: true }, baseRevision: base },
    ])
    expect(merged.status).toBe(200)
    expect((await flag(p.production, k)).body).toMatchObject({ is_enabled: true, rollout_percentage: 20 })
  })

  const flagOf = (k: string) => ({
    key: k,
    is_enabled: true,
    rollout_percentage: null,
    description: 'x'.repeat(200),
    rules: [],
    flag_type: 'boolean',
    variants: [],
    prerequisites: [],
  })
  it('a batch of 500 operations applies in one transaction (environment checks read the environment once)', async () => {
    const env = await h.call(`/api/projects/${p.id}/environments`, {
      method: 'POST',
      as: h.admin,
      body: { name: `Bulk ${++n}` },
    })
    expect(env.status).toBe(200)
    // 2 000 flags already there: each operation's environment check must not read them all again.
    await h.server.runtime.write(async (_trx, flags) => {
      for (let i = 0; i < 2000; i++) flags.put(flagOf(`old-${i}`), env.body.id)
    })
    const keys = Array.from({ length: 250 }, (_, i) => `bulk-${i}`)
    const operations = keys.flatMap((k, i) => [
      {
        action: 'insert',
        collection: 'flags',
        recordId: k,
        record: { is_enabled: true, prerequisites: i > 0 ? [{ flag_key: keys[i - 1] }] : [] },
      },
      { action: 'update', collection: 'flags', recordId: k, changes: { rollout_percentage: i % 101 } },
    ])
    // Count the reads of the whole environment (`select key, data from flagsync_flags where scope = ?`).
    let environmentReads = 0
    const count = (query: { sql: string }) => {
      if (
        /^select [`"]?key[`"]?, [`"]?data[`"]? from [`"]?flagsync_flags[`"]? where [`"]?scope[`"]? = /i.test(query.sql)
      )
        environmentReads++
    }
    h.server.runtime.knex.on('query', count)
    const res = await sync(env.body.id, operations).finally(() => h.server.runtime.knex.off('query', count))
    expect(res.status, JSON.stringify(res.body).slice(0, 300)).toBe(200)
    expect(res.body.applied).toBe(500)
    expect(environmentReads).toBe(1)
    const listed = (await flagsOf(h, env.body.id).list()).body as Json[]
    expect(listed).toHaveLength(2250)
    expect(listed.find((f) => f.key === 'bulk-249')).toMatchObject({
      rollout_percentage: 249 % 101,
      prerequisites: [{ flag_key: 'bulk-248' }],
    })
  })

  it('422 names the operation and field; a prerequisite inserted earlier in the batch counts; dependents block a delete', async () => {
    const [pre, dependent] = [key(), key()]
    const ok = await sync(p.development, [
      { action: 'insert', collection: 'flags', recordId: pre, record: { is_enabled: true } },
      {
        action: 'insert',
        collection: 'flags',
        recordId: dependent,
        record: { is_enabled: true, prerequisites: [{ flag_key: pre }] },
      },
    ])
    expect(ok.status, JSON.stringify(ok.body)).toBe(200)
    const before = await snapshotOfDatabase(h)
    const cases: Array<[Json[], string]> = [
      [
        [{ action: 'insert', collection: 'flags', recordId: key(), record: { is_enabled: 'yes' } }],
        'operations[0].record.is_enabled',
      ],
      // A key no flag can have is a wrong id, not a flag already gone.
      [[{ action: 'delete', collection: 'flags', recordId: '../../etc' }], 'operations[0].recordId'],
      [
        [{ action: 'update', collection: 'flags', recordId: pre, changes: { rollout_percentage: 101 } }],
        'operations[0].changes.rollout_percentage',
      ],
      [
        [{ action: 'update', collection: 'flags', recordId: key(), changes: { is_enabled: true } }],
        'operations[0].recordId',
      ],
      [
        [
          {
            action: 'insert',
            collection: 'flags',
            recordId: key(),
            record: { is_enabled: true, prerequisites: [{ flag_key: 'nope' }] },
          },
        ],
        'operations[0].record.prerequisites[0].flag_key',
      ],
      [[{ action: 'delete', collection: 'flags', recordId: pre }], 'operations[0].recordId'],
      [[{ action: 'insert', collection: 'segments', recordId: 'x', record: {} }], 'operations[0].collection'],
    ]
    for (const [operations, path] of cases) {
      const res = await sync(p.development, operations)
      expect(res.status, JSON.stringify(res.body)).toBe(422)
      expect(res.body.issues[0].path).toBe(path)
    }
    expect(await snapshotOfDatabase(h)).toEqual(before)
  })
})
