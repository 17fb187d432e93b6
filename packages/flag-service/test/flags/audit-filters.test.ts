import { DIALECTS } from '@flagsync/test-support/databases'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { bearer, type Caller, DAY, type Harness, type Json, startHarness } from '../harness.js'
import { POLL_MS, schedule, schedulesOf, settled } from '../schedules/support.js'
import { createProject, flagsOf, member, type Project, putFlag, setRequireApproval } from './support.js'

type Person = { as: Caller; id: number; email: string }
const iso = (ms: number) => new Date(ms).toISOString()

/**
 * The filters of the change routes (`flag`, `environment_id`, `actor`, `from`, `to`), alone, combined and
 * paged. One story, a day per step: Ann creates `checkout` in Production; Dan creates `beta` in Staging and the
 * admin a segment also named `checkout`; Ann asks to turn `gate` on in Development and Dan approves; Ann edits
 * `checkout` with a personal access token; Dan schedules `beta` in Staging and Ann approves the schedule.
 */
describe.each(DIALECTS)('the change routes’ filters on %s', (dialect) => {
  let h: Harness
  let p: Project
  let ann: Person
  let dan: Person
  const day: number[] = []
  const project = (query: string) => h.call(`/api/projects/${p.id}/changes?${query}`, { as: h.admin })
  const env = (id: string, query: string) => h.call(`/api/environments/${id}/changes?${query}`, { as: h.admin })
  /** `environment:key:actor` of each entry, newest first. */
  const story = (entries: Json[]) =>
    entries.map((e) => {
      const where = e.environment_id === null ? 'segment' : envName(e.environment_id)
      return `${where}:${e.key}:${nameOf(e.actor?.name)}`
    })
  const envName = (id: string) =>
    id === p.production ? 'production' : id === p.staging ? 'staging' : id === p.development ? 'development' : id
  const nameOf = (name: string | undefined) =>
    name?.startsWith(`${ann.email} (token`)
      ? 'ann-token'
      : name === ann.email
        ? 'ann'
        : name === dan.email
          ? 'dan'
          : name

  beforeAll(async () => {
    h = await startHarness(dialect, { env: { SCHEDULE_POLL_MS: String(POLL_MS) } })
    p = await createProject(h)
    ann = await member(h, p.id, 'editor', 'editor')
    dan = await member(h, p.id, 'editor', 'editor')
    await setRequireApproval(h, p, p.development, true)
    await putFlag(h, p.development, { key: 'gate', is_enabled: false })

    day.push(h.clock.now) // day 0
    expect((await flagsOf(h, p.production, ann.as).put({ key: 'checkout', is_enabled: false })).status).toBe(200)
    h.clock.advance(DAY)
    day.push(h.clock.now) // day 1
    expect((await flagsOf(h, p.staging, dan.as).put({ key: 'beta', is_enabled: false })).status).toBe(200)
    const segment = { key: 'checkout', name: 'Checkout testers', rules: [] }
    expect(
      (await h.call(`/api/projects/${p.id}/segments`, { method: 'POST', as: h.admin, body: segment })).status,
    ).toBe(200)
    h.clock.advance(DAY)
    day.push(h.clock.now) // day 2
    const filed = await flagsOf(h, p.development, ann.as).patch('gate', { is_enabled: true })
    expect(filed.status).toBe(202)
    const approve = `/api/environments/${p.development}/change-requests/${filed.body.id}/approve`
    expect((await h.call(approve, { method: 'POST', as: dan.as })).status).toBe(200)
    h.clock.advance(DAY)
    day.push(h.clock.now) // day 3
    const token = bearer(await h.createToken(ann.as, 'read_write'))
    expect((await flagsOf(h, p.production, token).patch('checkout', { is_enabled: true })).status).toBe(200)
    const created = await schedule(h, p.staging, 'beta', { is_enabled: true }, 1000, dan.as)
    expect((await schedulesOf(h, p.staging, ann.as).approve(created.id)).status).toBe(200)
    h.clock.advance(1000)
    expect((await settled(h, p.staging, created.id)).status).toBe('applied')
  })
  afterAll(async () => {
    await h?.dispose()
  })

  it('everything, unfiltered: the story newest first', async () => {
    const all = await project('limit=1000')
    expect(story(all.body.entries)).toEqual([
      'staging:beta:dan',
      'production:checkout:ann-token',
      'development:gate:dan',
      'segment:checkout:admin@example.com',
      'staging:beta:dan',
      'production:checkout:ann',
      'development:gate:admin@example.com',
    ])
  })

  it('?flag= keeps those flags, once or repeated, and leaves segments of the same key out', async () => {
    expect(story((await project('flag=checkout')).body.entries)).toEqual([
      'production:checkout:ann-token',
      'production:checkout:ann',
    ])
    expect(story((await project('flag=checkout&flag=gate')).body.entries)).toEqual([
      'production:checkout:ann-token',
      'development:gate:dan',
      'production:checkout:ann',
      'development:gate:admin@example.com',
    ])
    expect(story((await env(p.production, 'flag=checkout')).body.entries)).toEqual([
      'production:checkout:ann-token',
      'production:checkout:ann',
    ])
    expect((await env(p.staging, 'flag=checkout')).body).toEqual({ entries: [], nextCursor: null })
  })

  it('?environment_id= keeps those environments of the project (no segments); another id is a 422', async () => {
    expect(story((await project(`environment_id=${p.staging}`)).body.entries)).toEqual([
      'staging:beta:dan',
      'staging:beta:dan',
    ])
    const two = await project(`environment_id=${p.staging}&environment_id=${p.development}`)
    expect(story(two.body.entries)).toEqual([
      'staging:beta:dan',
      'development:gate:dan',
      'staging:beta:dan',
      'development:gate:admin@example.com',
    ])
    const other = await createProject(h)
    const refused = await project(`environment_id=${other.production}`)
    expect(refused.status).toBe(422)
    expect(refused.body).toMatchObject({ code: 'validation_failed', issues: [{ path: 'environment_id' }] })
    // The environment route has its environment in its path.
    expect((await env(p.staging, `environment_id=${p.staging}`)).status).toBe(422)
  })

  it('?actor= (user id or email) matches the actor, the requester and the schedule approver', async () => {
    const annsStory = [
      'staging:beta:dan', // Ann approved Dan's schedule
      'production:checkout:ann-token', // with her token
      'development:gate:dan', // Ann requested, Dan approved
      'production:checkout:ann',
    ]
    expect(story((await project(`actor=${ann.id}`)).body.entries)).toEqual(annsStory)
    expect(story((await project(`actor=${encodeURIComponent(ann.email)}`)).body.entries)).toEqual(annsStory)
    expect(story((await project(`actor=${dan.id}`)).body.entries)).toEqual([
      'staging:beta:dan',
      'development:gate:dan',
      'staging:beta:dan',
    ])
    // A name no user has matches that name only.
    expect((await project('actor=nobody%40example.com')).body).toEqual({ entries: [], nextCursor: null })
    const unknown = await project('actor=999999')
    expect(unknown.status).toBe(422)
    expect(unknown.body).toMatchObject({ code: 'validation_failed', issues: [{ path: 'actor' }] })
  })

  it('?from= is inclusive, ?to= exclusive, both ISO 8601 with a zone', async () => {
    const [, day1, day2] = day as [number, number, number]
    expect(story((await project(`from=${iso(day1)}&to=${iso(day2)}`)).body.entries)).toEqual([
      'segment:checkout:admin@example.com',
      'staging:beta:dan',
    ])
    const offset = encodeURIComponent('2026-01-02T01:00:00+01:00') // day 1 at midnight UTC
    expect(new Date('2026-01-02T01:00:00+01:00').getTime()).toBe(day1)
    expect(story((await project(`to=${offset}`)).body.entries)).toEqual([
      'production:checkout:ann',
      'development:gate:admin@example.com',
    ])
    expect((await project(`from=${iso(day2)}&to=${iso(day2)}`)).body.entries).toEqual([])
  })

  it('every filter combines, and pages with a cursor', async () => {
    const [, day1] = day as [number, number]
    const combined = await project(`actor=${ann.id}&flag=checkout&flag=beta&from=${iso(day1)}`)
    expect(story(combined.body.entries)).toEqual(['staging:beta:dan', 'production:checkout:ann-token'])
    const scoped = await project(`actor=${dan.id}&environment_id=${p.staging}&flag=beta&to=${iso(day1 + 1)}`)
    expect(story(scoped.body.entries)).toEqual(['staging:beta:dan'])

    const all = (await project(`actor=${ann.id}`)).body.entries as Json[]
    const paged: Json[] = []
    let cursor: string | null = null
    do {
      const res = await project(`actor=${ann.id}&limit=1${cursor ? `&cursor=${cursor}` : ''}`)
      expect(res.body.entries).toHaveLength(1)
      paged.push(...res.body.entries)
      cursor = res.body.nextCursor
    } while (cursor !== null)
    expect(paged).toEqual(all)

    // A cursor is a revision: with other filters it pages those, from below it.
    const first = await project(`actor=${ann.id}&limit=1`)
    const other = await project(`flag=checkout&cursor=${first.body.nextCursor}`)
    expect(story(other.body.entries)).toEqual(['production:checkout:ann-token', 'production:checkout:ann'])
  })

  it('?actor= with an SDK key’s name: what it changed and the requests it filed', async () => {
    const q = await createProject(h)
    const key = bearer(q.sdkKey) // the seeded Production key
    await putFlag(h, q.production, { key: 'gate', is_enabled: false })
    await putFlag(h, q.production, { key: 'plain', is_enabled: false })
    expect((await flagsOf(h, q.production, key).patch('plain', { is_enabled: true })).status).toBe(200)
    await setRequireApproval(h, q, q.production, true)
    const filed = await flagsOf(h, q.production, key).patch('gate', { is_enabled: true })
    expect(filed.status).toBe(202)
    const approve = `/api/environments/${q.production}/change-requests/${filed.body.id}/approve`
    expect((await h.call(approve, { method: 'POST', as: h.admin })).status).toBe(200)
    const changes = (query: string) => h.call(`/api/projects/${q.id}/changes?${query}`, { as: h.admin })
    const [direct] = (await changes('flag=plain')).body.entries as Json[]
    const name = direct?.actor?.name as string
    expect(name).toMatch(/^SDK key ".+" \(sk_live_/)
    const entries = (await changes(`actor=${encodeURIComponent(name)}`)).body.entries as Json[]
    expect(entries.map((e) => `${e.key}:${e.source.type}`)).toEqual(['gate:change_request', 'plain:api'])
  })

  it('finds a person’s requests and approved schedules through an index', async () => {
    const { knex } = h.server.runtime
    const indexes =
      dialect === 'postgres'
        ? ((await knex.raw(`select indexname as name from pg_indexes where indexname like 'flagsync_%'`))
            .rows as Json[])
        : ((await knex.raw(`select name from sqlite_master where type = 'index'`)) as Json[])
    const names = indexes.map((i) => i.name)
    expect(names).toContain('flagsync_change_requests_requested_by')
    expect(names).toContain('flagsync_schedules_approved_by')
  })

  it('a bad filter says why in one issue: too many flags, a time without its zone, a control character', async () => {
    const flags = Array.from({ length: 51 }, (_, i) => `flag=k${i}`).join('&')
    const cases: Array<[string, string, string]> = [
      [flags, 'flag', 'at most 50 values'],
      ['from=2026-01-02', 'from', 'must be an ISO 8601 time with a zone'],
      ['to=2026-01-02T10:00:00', 'to', 'must be an ISO 8601 time with a zone'],
      ['actor=a%00b', 'actor', 'must not contain control characters'],
      ['actor=ann%0A', 'actor', 'must not contain control characters'],
    ]
    for (const [query, path, message] of cases) {
      for (const res of [await project(query), await env(p.production, query)]) {
        expect(res.status, query).toBe(422)
        expect(res.body.issues, query).toEqual([{ path, message: expect.stringContaining(message) }])
        expect(res.body.error, query).toContain(message)
      }
    }
  })

  it('reads a zone offset whose + arrived as a space (an unencoded + in a query string)', async () => {
    // `?to=…T00:00:00+00:00` typed into a URL: the + decodes to a space.
    const to = iso(day[1] ?? 0).replace(/\.\d+Z$/, '')
    const plain = await project(`to=${encodeURIComponent(`${to}+00:00`)}`)
    const spaced = await project(`to=${to}+00:00`)
    expect(plain.status).toBe(200)
    expect(spaced.status, JSON.stringify(spaced.body)).toBe(200)
    expect(spaced.body.entries).toEqual(plain.body.entries)
    expect(plain.body.entries.length).toBeGreaterThan(0)
  })

  it('a bad filter is a 422 naming its parameter, on both routes', async () => {
    const bad: Array<[string, string]> = [
      ['from=2026-01-02', 'from'],
      ['from=2026-01-02T00:00:00', 'from'],
      ['to=yesterday', 'to'],
      ['to=2026-02-30T00:00:00Z', 'to'],
      [`from=${iso(day[2] ?? 0)}&to=${iso(day[1] ?? 0)}`, 'from'],
      ['flag=Not%20a%20key', 'flag'],
      ['actor=', 'actor'],
      ['actor=a&actor=b', 'actor'],
      ['person=ann', 'person'],
    ]
    for (const [query, path] of bad) {
      for (const res of [await project(query), await env(p.production, query)]) {
        expect(res.status, query).toBe(422)
        expect(res.body.code, query).toBe('validation_failed')
        expect(res.body.error, query).toContain(path)
        expect(String(res.body.issues?.[0]?.path), query).toContain(path)
      }
    }
  })
})
