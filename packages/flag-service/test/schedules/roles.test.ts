import { DIALECTS } from '@flagsync/test-support/databases'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createProject, member, type Project, putFlag, setRequireApproval, unique } from '../flags/support.js'
import { anonymous, bearer, type Caller, type Harness, startHarness } from '../harness.js'
import { inMs, schedule, schedulesOf } from './support.js'

/**
 * The README's role table for the schedule routes: each route called as the 11 callers of
 * test/flags/roles.test.ts. Reads are the flag reads' row, writes (create, cancel, approve) the flag writes' row.
 */
const CALLERS = ['A', 'PA', 'PE', 'PV', 'WV', 'NM', 'K', 'K2', 'RO', 'RW', 'AN'] as const
type CallerName = (typeof CALLERS)[number]
type Cell = 'ok' | 401 | 403 | 404

//                                A     PA    PE    PV   WV   NM   K     K2   RO   RW    AN
const READ: Cell[] = /*       */ ['ok', 'ok', 'ok', 'ok', 'ok', 404, 'ok', 404, 'ok', 'ok', 401]
const WRITE: Cell[] = /*      */ ['ok', 'ok', 'ok', 403, 403, 404, 'ok', 404, 403, 'ok', 401]

describe.each(DIALECTS)('schedule routes role table on %s', (dialect) => {
  let h: Harness
  let p: Project
  let callers: Record<CallerName, Caller>
  let creator: Caller
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
    creator = (await member(h, p.id, 'editor', 'editor')).as
    await putFlag(h, p.production, { key: 'read-me', is_enabled: false })
    await setRequireApproval(h, p, p.production, true)
  })
  afterAll(async () => {
    await h?.dispose()
  })

  const row = async (
    cells: Cell[],
    call: (as: Caller, target: string) => Promise<{ status: number }>,
    prepare = async () => '',
  ) => {
    const got: Record<string, Cell | number> = {}
    const want: Record<string, Cell | number> = {}
    for (const [i, name] of CALLERS.entries()) {
      const status = (await call(callers[name], await prepare())).status
      got[name] = status === 200 ? 'ok' : status
      want[name] = cells[i] as Cell
    }
    expect(got).toEqual(want)
  }
  /** A pending schedule of a fresh flag, made by a separate editor (so every caller may approve it); its id. */
  const fresh = async () => {
    const key = unique('sch')
    await putFlag(h, p.production, { key, is_enabled: false })
    return String((await schedule(h, p.production, key, { is_enabled: true }, 60_000, creator)).id)
  }
  const env = () => `/api/environments/${p.production}`

  it('GET …/schedules and …/flags/:key/schedules', async () => {
    await row(READ, (as) => schedulesOf(h, p.production, as).list())
    await row(READ, (as) => schedulesOf(h, p.production, as).ofFlag('read-me'))
  })
  it('POST …/flags/:key/schedules', () =>
    row(WRITE, (as) =>
      schedulesOf(h, p.production, as).create('read-me', {
        patch: { description: unique('d') },
        run_at: inMs(h, 60_000),
      }),
    ))
  it('DELETE …/schedules/:id', () =>
    row(WRITE, (as, id) => h.call(`${env()}/schedules/${id}`, { method: 'DELETE', as }), fresh))
  it('POST …/schedules/:id/approve', () =>
    row(WRITE, (as, id) => h.call(`${env()}/schedules/${id}/approve`, { method: 'POST', as }), fresh))
})
