import { DIALECTS } from '@flagsync/test-support/databases'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { anonymous, bearer, type Caller, type Harness, startHarness } from '../harness.js'
import { createProject, flagsOf, member, type Project, putFlag, setRequireApproval, unique } from './support.js'

/**
 * The README's flag rows of the role table, for every route of the
 * feature: each route is one test that calls it as all 11 callers (the same
 * callers as test/roles.test.ts) and compares the statuses at once.
 */
const CALLERS = ['A', 'PA', 'PE', 'PV', 'WV', 'NM', 'K', 'K2', 'RO', 'RW', 'AN'] as const
type CallerName = (typeof CALLERS)[number]
type Cell = 'ok' | 401 | 403 | 404

//                                A     PA    PE    PV   WV   NM   K     K2   RO   RW    AN
const READ: Cell[] = /*       */ ['ok', 'ok', 'ok', 'ok', 'ok', 404, 'ok', 404, 'ok', 'ok', 401]
const WRITE: Cell[] = /*      */ ['ok', 'ok', 'ok', 403, 403, 404, 'ok', 404, 403, 'ok', 401]
// Cancelling is for the requester (here a separate editor) or a workspace admin; to others the request does not exist.
const CANCEL: Cell[] = /*     */ ['ok', 404, 404, 404, 404, 404, 404, 404, 403, 404, 401]

describe.each(DIALECTS)('flag routes role table on %s', (dialect) => {
  let h: Harness
  let p: Project
  let callers: Record<CallerName, Caller>
  let filer: Caller
  beforeAll(async () => {
    h = await startHarness(dialect)
    p = await createProject(h)
    const q = await createProject(h)
    const pe = await member(h, p.id, 'editor', 'editor')
    callers = {
      A: h.admin,
      PA: (await member(h, p.id, 'editor', 'admin')).as,
      PE: pe.as,
      PV: (await member(h, p.id, 'editor', 'viewer')).as,
      WV: (await member(h, p.id, 'viewer', 'admin')).as,
      NM: (await member(h, undefined, 'editor')).as,
      K: bearer(p.sdkKey),
      K2: bearer(q.sdkKey),
      RO: bearer(await h.createToken(h.admin, 'read_only')),
      RW: bearer(await h.createToken(pe.as, 'read_write')),
      AN: anonymous,
    }
    filer = (await member(h, p.id, 'editor', 'editor')).as
    await h.call(`/api/projects/${p.id}/segments`, { method: 'POST', as: h.admin, body: { key: 'seg', name: 'S' } })
    await putFlag(h, p.staging, { key: 'read-me', is_enabled: true })
    await setRequireApproval(h, p, p.production, true)
  })
  afterAll(async () => {
    await h?.dispose()
  })

  /** Runs `call` as every caller (after `prepare` made it a fresh target) and compares the statuses with the row. */
  const row = async (
    cells: Cell[],
    success: number,
    call: (as: Caller, target: string) => Promise<{ status: number }>,
    prepare: () => Promise<string> = async () => '',
  ) => {
    const got: Record<string, Cell | number> = {}
    const want: Record<string, Cell | number> = {}
    for (const [i, name] of CALLERS.entries()) {
      const status = (await call(callers[name], await prepare())).status
      got[name] = status === success ? 'ok' : status
      want[name] = cells[i] as Cell
    }
    expect(got).toEqual(want)
  }
  const freshFlag = async () => {
    const key = unique('f')
    await putFlag(h, p.staging, { key, is_enabled: false })
    return key
  }
  const freshSegment = async () => {
    const key = unique('s')
    await h.call(`/api/projects/${p.id}/segments`, { method: 'POST', as: h.admin, body: { key, name: 'S' } })
    return key
  }
  /** A pending change request filed by the separate editor; resolves its id. */
  const freshRequest = async () => {
    const key = unique('cr')
    await putFlag(h, p.production, { key, is_enabled: false })
    return String((await flagsOf(h, p.production, filer).patch(key, { is_enabled: true })).body.id)
  }
  const env = (id: string) => `/api/environments/${id}`
  const segs = () => `/api/projects/${p.id}/segments`
  const crs = () => `${env(p.production)}/change-requests`

  it('GET …/flags', () => row(READ, 200, (as) => h.call(`${env(p.staging)}/flags`, { as })))
  it('GET …/flags/:key', () => row(READ, 200, (as) => h.call(`${env(p.staging)}/flags/read-me`, { as })))
  it('GET …/segments and …/segments/:key', async () => {
    await row(READ, 200, (as) => h.call(segs(), { as }))
    await row(READ, 200, (as) => h.call(`${segs()}/seg`, { as }))
  })
  it('GET …/change-requests', () => row(READ, 200, (as) => h.call(crs(), { as })))
  it('POST …/flags', () =>
    row(WRITE, 200, (as) =>
      h.call(`${env(p.staging)}/flags`, { method: 'POST', as, body: { key: unique('n'), is_enabled: true } }),
    ))
  it('PATCH …/flags/:key', () =>
    row(WRITE, 200, (as, key) => flagsOf(h, p.staging, as).patch(key, { is_enabled: true }), freshFlag))
  it('DELETE …/flags/:key', () => row(WRITE, 204, (as, key) => flagsOf(h, p.staging, as).delete(key), freshFlag))
  it('POST …/flags/:key/promote', () =>
    row(WRITE, 200, (as, key) => flagsOf(h, p.staging, as).promote(key, p.development), freshFlag))
  // A flag's project-level lifecycle writes like the flag writes.
  const lifecycle = (key: string, action: string) => `/api/projects/${p.id}/flags/${key}/${action}`
  const archivedFlag = async () => {
    const key = await freshFlag()
    await h.call(lifecycle(key, 'archive'), { method: 'POST', as: h.admin })
    return key
  }
  it('PATCH …/flags/:key/meta, POST …/flags/:key/archive and …/restore', async () => {
    await row(
      WRITE,
      200,
      (as, key) => h.call(lifecycle(key, 'meta'), { method: 'PATCH', as, body: { tags: ['web'] } }),
      freshFlag,
    )
    await row(WRITE, 200, (as, key) => h.call(lifecycle(key, 'archive'), { method: 'POST', as }), freshFlag)
    await row(WRITE, 200, (as, key) => h.call(lifecycle(key, 'restore'), { method: 'POST', as }), archivedFlag)
  })
  it('POST …/segments', () =>
    row(WRITE, 200, (as) => h.call(segs(), { method: 'POST', as, body: { key: unique('s'), name: 'S' } })))
  it('PATCH and DELETE …/segments/:key', async () => {
    await row(
      WRITE,
      200,
      (as, key) => h.call(`${segs()}/${key}`, { method: 'PATCH', as, body: { name: 'T' } }),
      freshSegment,
    )
    await row(WRITE, 204, (as, key) => h.call(`${segs()}/${key}`, { method: 'DELETE', as }), freshSegment)
  })
  it('POST …/change-requests/:id/approve', () =>
    row(WRITE, 200, (as, id) => h.call(`${crs()}/${id}/approve`, { method: 'POST', as }), freshRequest))
  it('POST …/change-requests/:id/reject', () =>
    row(WRITE, 204, (as, id) => h.call(`${crs()}/${id}/reject`, { method: 'POST', as }), freshRequest))
  // The audit routes are read like the flags; the per-environment sync receiver writes like PATCH.
  it('GET …/flags/:key/history, …/environments/:env_id/changes, …/projects/:id/changes', async () => {
    await row(READ, 200, (as) => h.call(`${env(p.staging)}/flags/read-me/history`, { as }))
    await row(READ, 200, (as) => h.call(`${env(p.staging)}/changes`, { as }))
    await row(READ, 200, (as) => h.call(`/api/projects/${p.id}/changes`, { as }))
  })
  it('POST …/sync', () =>
    row(
      WRITE,
      200,
      (as, key) =>
        h.call(`${env(p.staging)}/sync`, {
          method: 'POST',
          as,
          body: {
            batchId: unique('batch'),
            operations: [{ action: 'update', collection: 'flags', recordId: key, changes: { is_enabled: true } }],
          },
        }),
      freshFlag,
    ))
  it('DELETE …/change-requests/:id (cancel)', () =>
    row(CANCEL, 204, (as, id) => h.call(`${crs()}/${id}`, { method: 'DELETE', as }), freshRequest))
})
