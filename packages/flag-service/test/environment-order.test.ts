import { DIALECTS } from '@flagsync/test-support/databases'
import { afterEach, describe, expect, it } from 'vitest'
import { migrateService } from '../src/migrations.js'
import { createProject, openStream, type Project, parsed } from './flags/support.js'
import { type Caller, type Harness, headersFor, startHarness } from './harness.js'

/** A project admin reorders a project's environments; lists and dashboard streams follow. */
describe.each(DIALECTS)('environment order on %s', (dialect) => {
  const harnesses: Harness[] = []
  afterEach(async () => {
    for (const h of harnesses.splice(0)) await h.dispose()
  })
  const start = async () => {
    const h = await startHarness(dialect)
    harnesses.push(h)
    return h
  }
  const list = async (h: Harness, p: Project) =>
    (await h.call(`/api/projects/${p.id}/environments`, { as: h.admin })).body as Array<{ id: string; slug: string }>
  const reorder = (h: Harness, p: Project, ids: unknown, as: Caller = h.admin) =>
    h.call(`/api/projects/${p.id}/environments/order`, { method: 'PUT', as, body: { environment_ids: ids } })
  const positions = async (h: Harness, p: Project) =>
    (await h.server.runtime
      .knex('flagsync_environments')
      .where('project_id', p.id)
      .orderBy('position')
      .select('id', 'position')) as Array<{ id: string; position: number }>

  it('lists the environments in the order sent, and keeps it for environments created later', async () => {
    const h = await start()
    const p = await createProject(h)
    const before = await list(h, p)
    expect(before.map((e) => e.slug)).toEqual(['production', 'staging', 'development'])
    const ids = [...before].reverse().map((e) => e.id)
    const res = await reorder(h, p, ids)
    expect(res.status).toBe(200)
    expect(res.body.map((e: { slug: string }) => e.slug)).toEqual(['development', 'staging', 'production'])
    expect((await list(h, p)).map((e) => e.id)).toEqual(ids)
    const qa = await h.call(`/api/projects/${p.id}/environments`, { method: 'POST', as: h.admin, body: { name: 'QA' } })
    expect(qa.status).toBe(200)
    expect((await list(h, p)).map((e) => e.slug)).toEqual(['development', 'staging', 'production', 'qa'])
    expect((await positions(h, p)).map((r) => Number(r.position))).toEqual([1, 2, 3, 4])
  })

  it('refuses anything but every environment of the project exactly once with a 422 that changes nothing', async () => {
    const h = await start()
    const p = await createProject(h)
    const other = await createProject(h)
    const [a, b, c] = (await list(h, p)).map((e) => e.id) as [string, string, string]
    const foreign = (await list(h, other))[0]?.id
    const before = await h.dump()
    const cases: Array<[unknown, string]> = [
      [[a, b], 'is missing'],
      [[a, b, b], 'twice'],
      [[a, b, c, foreign], 'is not an environment of this project'],
      [[b, c, foreign], 'is not an environment of this project'],
      [[], 'must list the environments'],
      ['abc', 'environment_ids'],
    ]
    for (const [ids, message] of cases) {
      const res = await reorder(h, p, ids)
      expect(res.status, JSON.stringify(ids)).toBe(422)
      expect(res.body.error).toContain('environment_ids')
      expect(JSON.stringify(res.body.issues)).toContain(message)
    }
    const extra = await h.call(`/api/projects/${p.id}/environments/order`, {
      method: 'PUT',
      as: h.admin,
      body: { environment_ids: [a, b, c], position: 1 },
    })
    expect(extra.status).toBe(422)
    expect(await h.dump()).toEqual(before)
  })

  it('needs the project admin role; an unknown project is a 404; other methods are a 405', async () => {
    const h = await start()
    const p = await createProject(h)
    const ids = (await list(h, p)).map((e) => e.id)
    await h.createUser({ email: 'ed@example.com', role: 'editor', password: 'long enough' })
    const editor = await h.login('ed@example.com', 'long enough')
    const edId = (await h.call('/api/auth/me', { as: editor })).body.id
    await h.call(`/api/projects/${p.id}/members`, {
      method: 'POST',
      as: h.admin,
      body: { user_id: edId, role: 'editor' },
    })
    expect((await reorder(h, p, [...ids].reverse(), editor)).status).toBe(403)
    expect((await list(h, p)).map((e) => e.id)).toEqual(ids)
    const missing = await h.call('/api/projects/00000000-0000-4000-8000-000000000000/environments/order', {
      method: 'PUT',
      as: h.admin,
      body: { environment_ids: ids },
    })
    expect(missing.status).toBe(404)
    const get = await h.call(`/api/projects/${p.id}/environments/order`, { as: h.admin })
    expect(get.status).toBe(405)
    expect(get.res.headers.get('allow')).toBe('PUT')
  })

  it('two concurrent reorders end in one of the two orders, never a mix, with unique positions', async () => {
    const h = await start()
    const p = await createProject(h)
    for (const name of ['QA', 'Demo', 'Perf']) {
      await h.call(`/api/projects/${p.id}/environments`, { method: 'POST', as: h.admin, body: { name } })
    }
    const ids = (await list(h, p)).map((e) => e.id)
    const first = [...ids].reverse()
    const second = [ids[2], ids[0], ids[5], ids[1], ids[4], ids[3]] as string[]
    for (let round = 0; round < 8; round++) {
      const orders = [first, second, first, second, first, second]
      const results = await Promise.all(orders.map((order) => reorder(h, p, order)))
      expect(results.map((r) => r.status)).toEqual(orders.map(() => 200))
      const now = (await list(h, p)).map((e) => e.id)
      expect([first, second]).toContainEqual(now)
      const rows = await positions(h, p)
      expect(rows.map((r) => Number(r.position))).toEqual([1, 2, 3, 4, 5, 6])
      expect(rows.map((r) => r.id)).toEqual(now)
    }
  })

  it('the database itself refuses two environments at one position of a project', async () => {
    const h = await start()
    const p = await createProject(h)
    const [a, b] = (await list(h, p)).map((e) => e.id) as [string, string]
    const row = await h.server.runtime.knex('flagsync_environments').where('id', a).first('position')
    await expect(
      h.server.runtime.knex('flagsync_environments').where('id', b).update({ position: row.position }),
    ).rejects.toThrow()
  })

  it('migration 0002 renumbers the positions of an older database (gaps, ties) before making them unique', async () => {
    const h = await start()
    const p = await createProject(h)
    const { knex } = h.server.runtime
    await knex.schema.alterTable('flagsync_environments', (t) => {
      t.dropUnique(['project_id', 'position'])
    })
    await knex('flagsync_environments').where('id', p.production).update({ position: 5 })
    await knex('flagsync_environments').where('id', p.staging).update({ position: 5 })
    await knex('flagsync_environments').where('id', p.development).update({ position: 2 })
    await knex('flagsync_service_migrations').where('name', '0002_environment_positions_unique').delete()
    await migrateService(h.server.runtime.db)
    const tied = [p.production, p.staging].sort() // same position and creation time: by id
    expect((await positions(h, p)).map((r) => [r.id, Number(r.position)])).toEqual([
      [p.development, 1],
      [tied[0], 2],
      [tied[1], 3],
    ])
    await expect(knex('flagsync_environments').where('id', p.development).update({ position: 2 })).rejects.toThrow()
    expect((await list(h, p)).map((e) => e.id)).toEqual([p.development, ...tied])
  })

  it('dashboard streams following the project hear the new order at once; SDK streams and other projects do not', async () => {
    const h = await start()
    const p = await createProject(h)
    const other = await createProject(h)
    const ids = (await list(h, p)).map((e) => e.id)
    const dashboard = await openStream(h, headersFor(h.admin))
    const elsewhere = await openStream(h, headersFor(h.admin), `?environment_id=${(await list(h, other))[0]?.id}`)
    const sdk = await openStream(h, { Authorization: `Bearer ${p.sdkKey}` })
    for (const s of [dashboard, elsewhere, sdk]) {
      expect(s.status).toBe(200)
      await s.waitFor((e) => e.event === 'ready')
    }
    const order = [ids[1], ids[2], ids[0]]
    const sent = Date.now()
    expect((await reorder(h, p, order)).status).toBe(200)
    const event = await dashboard.waitFor((e) => e.event === 'environments', 1000)
    expect(Date.now() - sent).toBeLessThan(1000)
    expect(JSON.parse(event.data)).toEqual({ project_id: p.id, environment_ids: order })
    // A flag change after it proves the other streams were live and skipped the order.
    const envOfOther = (await list(h, other))[0]?.id
    await h.call(`/api/environments/${envOfOther}/flags`, {
      method: 'POST',
      as: h.admin,
      body: { key: 'after', is_enabled: true },
    })
    await h.call(`/api/environments/${ids[0]}/flags`, {
      method: 'POST',
      as: h.admin,
      body: { key: 'after', is_enabled: true },
    })
    await elsewhere.waitFor((e) => e.event === 'update' && e.data.includes('"after"'))
    await sdk.waitFor((e) => e.event === 'update' && e.data.includes('"after"'))
    expect(parsed(elsewhere).map(([event]) => event)).not.toContain('environments')
    expect(parsed(sdk).map(([event]) => event)).not.toContain('environments')
    for (const s of [dashboard, elsewhere, sdk]) s.close()
  })
})
