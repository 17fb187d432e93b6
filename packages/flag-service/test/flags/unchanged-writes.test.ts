import { randomUUID } from 'node:crypto'
import { DIALECTS } from '@flagsync/test-support/databases'
import type { SseReader } from '@flagsync/test-support/sse-reader'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { type Caller, type Harness, type Json, startHarness } from '../harness.js'
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
  sdkKeyFor,
  setRequireApproval,
  storeRevision,
} from './support.js'

/** Long enough for a committed write's update to reach an open stream on a loaded machine. */
const QUIET_MS = 400
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

describe.each(DIALECTS)('flag service: a write that changes nothing on %s', (dialect) => {
  let h: Harness
  let p: Project
  let editor: { as: Caller }
  let reviewer: { as: Caller }
  const readers: SseReader[] = []
  let n = 0
  const key = () => `same-${++n}`

  beforeAll(async () => {
    h = await startHarness(dialect)
    p = await createProject(h)
    editor = await member(h, p.id, 'editor', 'editor')
    reviewer = await member(h, p.id, 'editor', 'editor')
    await setRequireApproval(h, p, p.staging, true)
  })
  afterEach(() => {
    for (const r of readers.splice(0)) r.close()
  })
  afterAll(async () => {
    await h?.dispose()
  })

  const historyOf = async (env: string, k: string) =>
    (await h.call(`/api/environments/${env}/flags/${k}/history`, { as: h.admin })).body.entries as Json[]

  /** A flag in `env` and a stream of that environment past its bootstrap. */
  async function setUp(env: string, sdkKey: string) {
    const k = key()
    const created = await putFlag(h, env, { key: k, is_enabled: true, description: 'night' })
    const stream = await openStream(h, keyHeader(sdkKey))
    readers.push(stream)
    await bootstrapOf(stream)
    return { k, created, stream, seen: stream.events.length }
  }

  /** 200 with the flag as stored, at its unchanged revision (ETag too); no history entry, no stream event. */
  async function expectNoOp(
    env: string,
    s: Awaited<ReturnType<typeof setUp>>,
    res: { status: number; body: Json; res: Response },
  ) {
    expect(res.status, JSON.stringify(res.body)).toBe(200)
    expect(res.body).toEqual(s.created)
    expect(res.res.headers.get('etag')).toBe(`"${s.created.revision}"`)
    expect(await storeRevision(h.server.runtime.knex, env, s.k)).toBe(s.created.revision)
    expect(await historyOf(env, s.k)).toHaveLength(1)
    await sleep(QUIET_MS)
    expect(s.stream.events.length).toBe(s.seen)
  }

  /** A real change then does reach the stream: the quiet one above was listening. */
  async function expectRealChangeArrives(env: string, s: Awaited<ReturnType<typeof setUp>>) {
    const res = await flagsOf(h, env).patch(s.k, { description: 'day' })
    expect(res.status).toBe(200)
    expect(res.body.revision).toBeGreaterThan(s.created.revision)
    await s.stream.waitFor((e) => e.event === 'update', 5000, s.seen)
    expect(JSON.parse(s.stream.events[s.seen]?.data ?? '{}').flag).toMatchObject({ key: s.k, description: 'day' })
    expect(await historyOf(env, s.k)).toHaveLength(2)
  }

  it('a PATCH of the values it has: 200 at the current revision, nothing recorded or streamed', async () => {
    const s = await setUp(p.production, p.sdkKey)
    // PATCH {} stays a 422 here ("send at least one field to change"), as before.
    expect((await flagsOf(h, p.production).patch(s.k, {})).status).toBe(422)
    await expectNoOp(p.production, s, await flagsOf(h, p.production).patch(s.k, { description: 'night' }))
    await expectNoOp(
      p.production,
      s,
      await flagsOf(h, p.production).patch(s.k, { is_enabled: true, description: 'night', revision: 1 }),
    )
    await expectRealChangeArrives(p.production, s)
  })

  it('POST of the flag as GET returned it (revision included, keys reordered) changes nothing', async () => {
    const s = await setUp(p.production, p.sdkKey)
    const read = (await flagsOf(h, p.production).get(s.k)).body as Record<string, unknown>
    await expectNoOp(
      p.production,
      s,
      await flagsOf(h, p.production).put(Object.fromEntries(Object.entries(read).reverse())),
    )
    await expectRealChangeArrives(p.production, s)
  })

  it('promoting onto an identical flag: 200 at the target revision, nothing recorded or streamed', async () => {
    const s = await setUp(p.production, p.sdkKey)
    await putFlag(h, p.development, { key: s.k, is_enabled: true, description: 'night' })
    await expectNoOp(p.production, s, await flagsOf(h, p.development).promote(s.k, p.production))
    await expectRealChangeArrives(p.production, s)
  })

  it('where approval is required, a PATCH that changes nothing files nothing and answers 200', async () => {
    const s = await setUp(p.staging, await sdkKeyFor(h, p.id, p.staging))
    const filed = (await changeRequestRows(h)).length
    await expectNoOp(p.staging, s, await flagsOf(h, p.staging, editor.as).patch(s.k, { description: 'night' }))
    expect(await changeRequestRows(h)).toHaveLength(filed)
    // A real change is still filed for review (202), not applied.
    expect((await flagsOf(h, p.staging, editor.as).patch(s.k, { description: 'day' })).status).toBe(202)
    expect(await changeRequestRows(h)).toHaveLength(filed + 1)
  })

  it('approving a request whose change the flag already has: approved, 200 at the current revision, nothing recorded', async () => {
    const s = await setUp(p.staging, await sdkKeyFor(h, p.id, p.staging))
    const filed = await flagsOf(h, p.staging, editor.as).patch(s.k, { description: 'day' })
    expect(filed.status).toBe(202)
    // An admin makes the same change directly (admins may bypass by replacing the flag).
    const direct = await flagsOf(h, p.staging).put({ key: s.k, is_enabled: true, description: 'day' })
    expect(direct.status).toBe(200)
    await s.stream.waitFor(() => s.stream.events.length > s.seen, 5000)
    const approved = await h.call(`/api/environments/${p.staging}/change-requests/${filed.body.id}/approve`, {
      method: 'POST',
      as: reviewer.as,
      body: { force: true },
    })
    expect(approved.status, JSON.stringify(approved.body)).toBe(200)
    expect(approved.body).toEqual(direct.body)
    expect(await historyOf(p.staging, s.k)).toHaveLength(2)
    await sleep(QUIET_MS)
    expect(s.stream.events.slice(s.seen).filter((e) => e.event === 'update')).toHaveLength(1)
  })

  it('a sync batch re-sending the current value: acked as applied, no revision bump, nothing streamed or filed', async () => {
    const s = await setUp(p.production, p.sdkKey)
    const read = (await flagsOf(h, p.production).get(s.k)).body
    const batchId = randomUUID()
    const operations = [
      { action: 'update', collection: 'flags', recordId: s.k, changes: { is_enabled: true, description: 'night' } },
      { action: 'insert', collection: 'flags', recordId: s.k, record: read },
    ]
    const res = await h.call(`/api/environments/${p.production}/sync`, {
      method: 'POST',
      as: editor.as,
      body: { batchId, operations },
    })
    expect(res.status, JSON.stringify(res.body)).toBe(200)
    expect(res.body).toEqual({ batchId, applied: 2, change_requests: [] })
    expect(await storeRevision(h.server.runtime.knex, p.production, s.k)).toBe(s.created.revision)
    expect(await historyOf(p.production, s.k)).toHaveLength(1)
    await sleep(QUIET_MS)
    expect(s.stream.events.length).toBe(s.seen)
    await expectRealChangeArrives(p.production, s)
  })

  it('a sync update that changes nothing where approval is required files no change request', async () => {
    const k = key()
    await putFlag(h, p.staging, { key: k, is_enabled: true, description: 'night' })
    const filed = (await changeRequestRows(h)).length
    const batchId = randomUUID()
    const res = await h.call(`/api/environments/${p.staging}/sync`, {
      method: 'POST',
      as: editor.as,
      body: {
        batchId,
        operations: [{ action: 'update', collection: 'flags', recordId: k, changes: { description: 'night' } }],
      },
    })
    expect(res.status, JSON.stringify(res.body)).toBe(200)
    expect(res.body).toEqual({ batchId, applied: 1, change_requests: [] })
    expect(await changeRequestRows(h)).toHaveLength(filed)
  })
})
