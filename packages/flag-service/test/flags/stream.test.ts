import { evaluate } from '@flagsync/evaluation'
import {
  authenticate,
  ensureWorkspace,
  type FlagServiceServer,
  loadServiceConfig,
  openServiceRuntime,
  type ServiceRuntime,
  startFlagServiceServer,
} from '@flagsync/flag-service'
import { errorHandler, listen, notFound, type RunningServer, silentLogger } from '@flagsync/server-kit'
import { createTestDatabase, DIALECTS, type TestDatabase } from '@flagsync/test-support/databases'
import { openSse, type SseReader } from '@flagsync/test-support/sse-reader'
import express from 'express'
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest'
import { flagStreamsOf, mountFlagFeature } from '../../src/flags/index.js'
import { type Harness, type Json, startHarness, T0 } from '../harness.js'
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
  storeRevision,
} from './support.js'

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

describe.each(DIALECTS)('/stream and /flags/snapshot on %s', (dialect) => {
  let h: Harness
  const readers: SseReader[] = []
  const open = async (headers: Record<string, string>, query = '') => {
    const reader = await openStream(h, headers, query)
    readers.push(reader)
    return reader
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

  it('an SDK key stream: connected with its environment, one UPSERT per flag, ready with the count, then every change of that environment only', async () => {
    const p = await createProject(h)
    const prod = flagsOf(h, p.production)
    await putFlag(h, p.production, { key: 'b', is_enabled: true })
    await putFlag(h, p.production, { key: 'a', is_enabled: false, flag_type: 'string', default_value: 'x' })
    await putFlag(h, p.staging, { key: 'staging-only', is_enabled: true })
    const stream = await open(keyHeader(p.sdkKey))
    expect(stream.status).toBe(200)
    const boot = await bootstrapOf(stream)
    expect(boot.connected).toEqual({ environment_id: p.production })
    // Bootstrap updates go in revision order (b was written first), so an id is a resume point.
    expect(boot.flags.map((u) => [u.env_id, u.flag.key])).toEqual([
      [p.production, 'b'],
      [p.production, 'a'],
    ])
    expect(boot.flags[1].flag).toEqual((await prod.get('a')).body)
    expect(boot.ready).toBe('2')
    // Each carries its flag's revision as id, like live ones; connected clears the id, ready has none.
    expect(stream.events.slice(0, 4).map((e) => e.id)).toEqual([
      '',
      String(await storeRevision(h.server.runtime.knex, p.production, 'b')),
      String(await storeRevision(h.server.runtime.knex, p.production, 'a')),
      undefined,
    ])
    expect(boot.flags.map((u) => u.flag.revision)).toEqual([
      await storeRevision(h.server.runtime.knex, p.production, 'b'),
      await storeRevision(h.server.runtime.knex, p.production, 'a'),
    ])

    // Each kind of change reaches the stream as one update with the revision as its id.
    const next = async (action: () => Promise<{ status: number }>, status = 200) => {
      const from = stream.events.length
      const res = await action()
      expect(res.status).toBe(status)
      const event = await stream.waitFor(() => true, 5000, from)
      expect(event.event).toBe('update')
      expect(Number(event.id)).toBeGreaterThan(0)
      return JSON.parse(event.data) as Json
    }
    expect(await next(() => prod.put({ key: 'c', is_enabled: true }))).toEqual({
      type: 'UPSERT',
      env_id: p.production,
      flag: { ...(await prod.get('c')).body },
    })
    expect((await next(() => prod.put({ key: 'c', is_enabled: false, description: 'replaced' }))).flag).toMatchObject({
      key: 'c',
      is_enabled: false,
      description: 'replaced',
    })
    expect((await next(() => prod.patch('c', { rollout_percentage: 10 }))).flag).toMatchObject({
      key: 'c',
      is_enabled: false,
      description: 'replaced',
      rollout_percentage: 10,
    })
    expect(await next(() => prod.delete('c'), 204)).toEqual({ type: 'DELETE', env_id: p.production, key: 'c' })
    expect((await next(() => flagsOf(h, p.staging).promote('staging-only', p.production))).flag.key).toBe(
      'staging-only',
    )

    // Approving a change request in Production is a change there too.
    await setRequireApproval(h, p, p.production, true)
    const editor = await member(h, p.id, 'editor', 'editor')
    const filed = await flagsOf(h, p.production, editor.as).patch('a', { is_enabled: true })
    expect(filed.status).toBe(202)
    const approved = await next(() =>
      h.call(`/api/environments/${p.production}/change-requests/${filed.body.id}/approve`, {
        method: 'POST',
        as: h.admin,
      }),
    )
    expect(approved.flag).toMatchObject({ key: 'a', is_enabled: true })

    // Staging changes never reach a Production key's stream: the next event after them is the Production sentinel.
    const from = stream.events.length
    const staging = flagsOf(h, p.staging)
    await staging.put({ key: 's2', is_enabled: true })
    await staging.patch('s2', { is_enabled: false })
    await staging.delete('s2')
    await flagsOf(h, p.development).put({ key: 'dev', is_enabled: true })
    await putFlag(h, p.production, { key: 'sentinel', is_enabled: true })
    await stream.waitFor((e) => e.data.includes('sentinel'), 5000, from)
    expect(parsed(stream, from).map(([, d]) => [d.env_id, d.flag?.key])).toEqual([[p.production, 'sentinel']])
    expect(parsed(stream).every(([name, d]) => name !== 'update' || d.env_id === p.production)).toBe(true)
  })

  it('a Staging key follows Staging only, and another project never leaks in', async () => {
    const p = await createProject(h)
    const q = await createProject(h)
    const stagingKey = await sdkKeyFor(h, p.id, p.staging)
    await putFlag(h, p.staging, { key: 'one', is_enabled: true })
    const stream = await open(keyHeader(stagingKey))
    const boot = await bootstrapOf(stream)
    expect(boot.connected).toEqual({ environment_id: p.staging })
    expect(boot.flags.map((u) => u.flag.key)).toEqual(['one'])
    const from = stream.events.length
    await putFlag(h, p.production, { key: 'prod', is_enabled: true })
    await putFlag(h, q.staging, { key: 'other-project', is_enabled: true })
    await putFlag(h, p.staging, { key: 'two', is_enabled: true })
    await stream.waitFor((e) => e.data.includes('"two"'), 5000, from)
    expect(parsed(stream, from).map(([, d]) => d.flag.key)).toEqual(['two'])
    // Naming another environment with the key is refused, not silently re-scoped to the key's own.
    const misnamed = await open(keyHeader(stagingKey), `?environment_id=${p.production}`)
    expect(misnamed.status).toBe(403)
    const own = await open(keyHeader(stagingKey), `?environment_id=${p.staging}`)
    expect((await bootstrapOf(own)).connected).toEqual({ environment_id: p.staging })
  })

  it('takes the key as ?sdk_key= for EventSource; refuses bad keys and other credentials there (401)', async () => {
    const p = await createProject(h)
    await putFlag(h, p.production, { key: 'q', is_enabled: true })
    const stream = await open({}, `?sdk_key=${encodeURIComponent(p.sdkKey)}`)
    expect((await bootstrapOf(stream)).connected).toEqual({ environment_id: p.production })
    expect((await open({}, '?sdk_key=sk_live_nope')).status).toBe(401)
    const token = await h.createToken(h.admin, 'read_write')
    expect((await open({}, `?sdk_key=${token}`)).status).toBe(401)
    expect((await open({})).status).toBe(401)
    expect((await open({ Authorization: 'Bearer sk_live_wrong' })).status).toBe(401)
  })

  it('a repeated or empty ?sdk_key= is a 401 naming the parameter, with WWW-Authenticate, on the stream and the snapshot', async () => {
    const p = await createProject(h)
    const key = encodeURIComponent(p.sdkKey)
    for (const path of ['/stream', '/flags/snapshot']) {
      for (const query of [`?sdk_key=${key}&sdk_key=${key}`, '?sdk_key=']) {
        const res = await fetch(`${h.url}${path}${query}`)
        expect(res.status).toBe(401)
        expect(res.headers.get('www-authenticate')).toBe('Bearer')
        expect(await res.json()).toMatchObject({
          code: 'unauthorized',
          error: expect.stringMatching(/^sdk_key must be/),
        })
      }
    }
  })

  it('replays connected, every current flag and ready on each new connection', async () => {
    const p = await createProject(h)
    await putFlag(h, p.production, { key: 'x', is_enabled: true })
    const first = await open(keyHeader(p.sdkKey))
    await bootstrapOf(first)
    first.close()
    await putFlag(h, p.production, { key: 'y', is_enabled: true })
    await flagsOf(h, p.production).delete('x')
    const second = await open(keyHeader(p.sdkKey))
    const boot = await bootstrapOf(second)
    expect(boot.flags.map((u) => u.flag.key)).toEqual(['y'])
    expect(boot.ready).toBe('1')
  })

  it('a session connection: environment_id null, the flags of the environments the user can see, each with env_id', async () => {
    const p = await createProject(h)
    const hidden = await createProject(h)
    await putFlag(h, p.production, { key: 'pf', is_enabled: true })
    await putFlag(h, p.staging, { key: 'sf', is_enabled: true })
    await putFlag(h, hidden.production, { key: 'hidden', is_enabled: true })
    const viewer = await member(h, p.id, 'viewer', 'viewer')
    const cookie = { Cookie: (viewer.as as { cookie: string }).cookie }

    const all = await open(cookie)
    const boot = await bootstrapOf(all)
    expect(boot.connected).toEqual({ environment_id: null })
    expect(boot.flags.map((u) => [u.env_id, u.flag.key])).toEqual([
      [p.production, 'pf'],
      [p.staging, 'sf'],
    ])
    expect(boot.ready).toBe('2')

    const one = await open(cookie, `?environment_id=${p.staging}`)
    expect((await bootstrapOf(one)).flags.map((u) => u.flag.key)).toEqual(['sf'])
    expect((await open(cookie, `?environment_id=${hidden.production}`)).status).toBe(404)
    expect((await open(cookie, '?environment_id=nope')).status).toBe(404)

    // Live updates of every followed environment, named by env_id; others stay out.
    const from = all.events.length
    const fromOne = one.events.length
    await putFlag(h, hidden.production, { key: 'hidden2', is_enabled: true })
    await putFlag(h, p.production, { key: 'pf2', is_enabled: true })
    await putFlag(h, p.staging, { key: 'sf2', is_enabled: true })
    await all.waitFor((e) => e.data.includes('sf2'), 5000, from)
    expect(parsed(all, from).map(([, d]) => [d.env_id, d.flag.key])).toEqual([
      [p.production, 'pf2'],
      [p.staging, 'sf2'],
    ])
    await one.waitFor((e) => e.data.includes('sf2'), 5000, fromOne)
    expect(parsed(one, fromOne).map(([, d]) => d.flag.key)).toEqual(['sf2'])
  })

  it('a follow-everything dashboard picks up environments that become visible after it connected', async () => {
    const first = await createProject(h)
    const viewer = await member(h, first.id, 'viewer', 'viewer')
    const cookie = { Cookie: (viewer.as as { cookie: string }).cookie }
    const adminCookie = { Cookie: (h.admin as { cookie: string }).cookie }
    const all = await open(adminCookie)
    const mine = await open(cookie)
    const pinned = await open(cookie, `?environment_id=${first.production}`)
    for (const s of [all, mine, pinned]) await bootstrapOf(s)
    const [fromAll, fromMine, fromPinned] = [all.events.length, mine.events.length, pinned.events.length]

    // A project created after the admin connected: its first flag arrives without a reconnect.
    const later = await createProject(h)
    await putFlag(h, later.staging, { key: 'born-later', is_enabled: true })
    await all.waitFor((e) => e.data.includes('born-later'), 5000, fromAll)
    expect(parsed(all, fromAll).map(([, d]) => [d.env_id, d.flag.key])).toEqual([[later.staging, 'born-later']])
    await putFlag(h, later.staging, { key: 'born-later', is_enabled: false })
    await all.waitFor((e) => e.data.includes('"is_enabled":false'), 5000, fromAll)

    // The viewer cannot see it; once made a member, the next revalidation sends its flags and follows it.
    await putFlag(h, later.production, { key: 'for-members', is_enabled: true })
    await flagStreamsOf(h.server.runtime).followNew()
    // Further changes there re-list nothing: only an environment's first flag can be news.
    const refresh = vi.spyOn(flagStreamsOf(h.server.runtime), 'followNew')
    await putFlag(h, later.production, { key: 'for-members', is_enabled: false })
    await putFlag(h, later.production, { key: 'for-members', is_enabled: true })
    expect(refresh).not.toHaveBeenCalled()
    refresh.mockRestore()
    expect(mine.events.slice(fromMine).some((e) => e.data.includes(later.id) || e.data.includes('born-later'))).toBe(
      false,
    )
    const added = await h.call(`/api/projects/${later.id}/members`, {
      method: 'POST',
      as: h.admin,
      body: { user_id: viewer.id, role: 'viewer' },
    })
    expect(added.status).toBe(200)
    expect(await flagStreamsOf(h.server.runtime).revalidate()).toBe(0)
    await mine.waitFor((e) => e.data.includes('for-members'), 5000, fromMine)
    expect(
      parsed(mine, fromMine)
        .map(([, d]) => [d.env_id, d.flag.key])
        .sort(),
    ).toEqual(
      [
        [later.production, 'for-members'],
        [later.staging, 'born-later'],
      ].sort(),
    )
    const fromMineLive = mine.events.length
    await putFlag(h, later.development, { key: 'dev-live', is_enabled: true })
    await mine.waitFor((e) => e.data.includes('dev-live'), 5000, fromMineLive)

    // A connection that named its environments keeps exactly those.
    await putFlag(h, first.production, { key: 'pinned-sees', is_enabled: true })
    await pinned.waitFor((e) => e.data.includes('pinned-sees'), 5000, fromPinned)
    expect(parsed(pinned, fromPinned).map(([, d]) => d.flag.key)).toEqual(['pinned-sees'])
  })

  it('/flags/snapshot: the stream flags as a plain array for an SDK key; 400 for a session, 401 without or with bad credentials', async () => {
    const p = await createProject(h)
    await putFlag(h, p.production, { key: 'n', is_enabled: true, rollout_percentage: 30 })
    await putFlag(h, p.production, { key: 'm', is_enabled: false, flag_type: 'integer', default_value: 3 })
    await putFlag(h, p.staging, { key: 'not-here', is_enabled: true })
    const stream = await open(keyHeader(p.sdkKey))
    const boot = await bootstrapOf(stream)

    const snap = await h.call('/flags/snapshot', { headers: keyHeader(p.sdkKey) })
    expect(snap.status).toBe(200)
    expect(snap.res.headers.get('content-type')).toMatch(/^application\/json/)
    // The same flags; the snapshot in key order, the stream in revision order.
    const byKey = (a: Json, b: Json) => String(a.key).localeCompare(String(b.key))
    expect(snap.body).toEqual(boot.flags.map((u) => u.flag).sort(byKey))
    expect(snap.body.map((f: Json) => f.key)).toEqual(['m', 'n'])

    const etag = snap.res.headers.get('etag') as string
    expect(
      (await h.request('/flags/snapshot', { headers: { ...keyHeader(p.sdkKey), 'If-None-Match': etag } })).status,
    ).toBe(304)
    // RFC 9110 weak comparison, as the flat API: a weakened tag, a list, `*`; another tag is a 200.
    for (const [header, status] of [
      [`W/${etag}`, 304],
      [`"x", ${etag}`, 304],
      ['*', 304],
      ['"x"', 200],
    ] as const) {
      const res = await h.request('/flags/snapshot', { headers: { ...keyHeader(p.sdkKey), 'If-None-Match': header } })
      expect(res.status, header).toBe(status)
    }
    expect((await h.call(`/flags/snapshot?sdk_key=${p.sdkKey}`)).body).toEqual(snap.body)

    expect((await h.call('/flags/snapshot', { as: h.admin })).status).toBe(400)
    expect((await h.call('/flags/snapshot')).status).toBe(401)
    expect((await h.call('/flags/snapshot', { headers: keyHeader('sk_live_nope') })).status).toBe(401)
    expect((await h.call('/flags/snapshot', { method: 'POST', headers: keyHeader(p.sdkKey) })).status).toBe(405)

    // A change shows in the next snapshot (and changes its ETag).
    await putFlag(h, p.production, { key: 'o', is_enabled: true })
    const after = await h.call('/flags/snapshot', { headers: { ...keyHeader(p.sdkKey), 'If-None-Match': etag } })
    expect(after.status).toBe(200)
    expect(after.body.map((f: Json) => f.key)).toEqual(['m', 'n', 'o'])
  })

  it('flags served by the stream evaluate with the shared evaluator: typed values, rules, variants, prerequisites', async () => {
    const p = await createProject(h)
    await putFlag(h, p.production, {
      key: 'gate',
      is_enabled: true,
      rules: [{ attribute: 'plan', operator: 'equals', values: ['pro'], variant: true }],
      rollout_percentage: 0,
    })
    await putFlag(h, p.production, {
      key: 'banner',
      is_enabled: true,
      flag_type: 'string',
      default_value: 'plain',
      disabled_value: 'off',
      rules: [{ attribute: 'country', operator: 'equals', values: ['DE'], variant: 'hallo' }],
      prerequisites: [{ flag_key: 'gate', required_value: true }],
    })
    await putFlag(h, p.production, {
      key: 'limit',
      is_enabled: true,
      flag_type: 'integer',
      default_value: 10,
      variants: [
        { weight: 1, value: 100 },
        { weight: 1, value: 200 },
      ],
    })
    await putFlag(h, p.production, {
      key: 'config',
      is_enabled: true,
      flag_type: 'json',
      default_value: { theme: 'dark', n: [1, 2] },
    })
    const stream = await open(keyHeader(p.sdkKey))
    const flags = new Map<string, Json>((await bootstrapOf(stream)).flags.map((u) => [u.flag.key, u.flag]))
    const get = (key: string) => flags.get(key)
    const run = (key: string, ctx: Record<string, unknown>) => evaluate(get(key), ctx, get)

    expect(run('banner', { user_id: 'u1', plan: 'pro', country: 'DE' })).toEqual({
      value: 'hallo',
      reason: 'TARGETING_MATCH',
    })
    expect(run('banner', { user_id: 'u1', plan: 'pro', country: 'FR' })).toEqual({ value: 'plain', reason: 'DEFAULT' })
    expect(run('banner', { user_id: 'u1', plan: 'free', country: 'DE' })).toEqual({ value: 'off', reason: 'DISABLED' })
    const limits = new Set<unknown>()
    for (let i = 0; i < 50; i++) {
      const r = run('limit', { user_id: `user-${i}` })
      expect(r.reason).toBe('SPLIT')
      limits.add(r.value)
    }
    expect([...limits].sort()).toEqual([100, 200])
    expect(run('config', {})).toEqual({ value: { theme: 'dark', n: [1, 2] }, reason: 'DEFAULT' })
  })

  it('closes streams whose access ended: a deleted SDK key, a logged-out session, a removed member', async () => {
    const p = await createProject(h)
    const spareKey = await sdkKeyFor(h, p.id, p.production)
    const doomed = await open(keyHeader(p.sdkKey))
    const kept = await open(keyHeader(spareKey))
    const leaving = await member(h, p.id, 'editor', 'viewer')
    const loggingOut = await member(h, p.id, 'editor', 'viewer')
    const cookieOf = (c: { as: unknown }) => ({ Cookie: (c.as as { cookie: string }).cookie })
    const removed = await open(cookieOf(leaving), `?environment_id=${p.production}`)
    const loggedOut = await open(cookieOf(loggingOut), `?environment_id=${p.production}`)
    for (const s of [doomed, kept, removed, loggedOut]) await bootstrapOf(s)
    const streams = flagStreamsOf(h.server.runtime)
    expect(await streams.revalidate()).toBe(0)

    const keys = (await h.call(`/api/projects/${p.id}/keys`, { as: h.admin })).body as Json[]
    const seeded = keys.find((k) => p.sdkKey.startsWith(k.prefix.replace('…', '')))
    expect((await h.call(`/api/projects/${p.id}/keys/${seeded.id}`, { method: 'DELETE', as: h.admin })).status).toBe(
      204,
    )
    expect(
      (await h.call(`/api/projects/${p.id}/members/${leaving.id}`, { method: 'DELETE', as: h.admin })).status,
    ).toBe(204)
    expect((await h.call('/api/auth/logout', { method: 'POST', as: loggingOut.as })).status).toBe(204)
    // The revoking routes end the streams themselves (through the change log), without waiting for a revalidation.
    const ended = Promise.all([doomed.ended, removed.ended, loggedOut.ended])
    await expect(Promise.race([ended.then(() => 'ended'), sleep(1000).then(() => 'open')])).resolves.toBe('ended')
    expect(await streams.revalidate()).toBe(0)
    const from = kept.events.length
    await putFlag(h, p.production, { key: 'still-here', is_enabled: true })
    await kept.waitFor((e) => e.data.includes('still-here'), 5000, from)
  })

  it('answers 405 for other methods on /stream', async () => {
    expect((await h.call('/stream', { method: 'POST', as: h.admin })).status).toBe(405)
  })
})

describe.each(DIALECTS)('two instances on one %s database', (dialect) => {
  let h: Harness
  let second: FlagServiceServer
  beforeAll(async () => {
    h = await startHarness(dialect)
    second = await startFlagServiceServer(loadServiceConfig({ PORT: '0', DATABASE_URL: h.databaseUrl }), silentLogger())
  })
  afterAll(async () => {
    await second?.close()
    await h?.dispose()
  })

  it('a flag or segment change made on one instance reaches the streams and snapshots of the other', async () => {
    const p = await createProject(h)
    await h.call(`/api/projects/${p.id}/segments`, {
      method: 'POST',
      as: h.admin,
      body: { key: 'team', name: 'Team', rules: [{ attribute: 'team', operator: 'equals', values: ['a'] }] },
    })
    await putFlag(h, p.production, {
      key: 'shared',
      is_enabled: true,
      rules: [{ segment_key: 'team', variant: false }],
    })
    const stream = await openSse(`${second.url}/stream`, keyHeader(p.sdkKey))
    try {
      const boot = await bootstrapOf(stream)
      expect(boot.flags.map((u) => u.flag.rules)).toEqual([
        [{ attribute: 'team', operator: 'equals', values: ['a'], variant: false }],
      ])
      const from = stream.events.length
      await flagsOf(h, p.production).patch('shared', { rollout_percentage: 40 })
      await stream.waitFor((e) => e.data.includes('"rollout_percentage":40'), 5000, from)
      await h.call(`/api/projects/${p.id}/segments/team`, {
        method: 'PATCH',
        as: h.admin,
        body: { rules: [{ attribute: 'team', operator: 'equals', values: ['b'] }] },
      })
      const resent = await stream.waitFor((e) => e.data.includes('"values":["b"]'), 5000, from)
      expect(JSON.parse(resent.data)).toMatchObject({ type: 'UPSERT', env_id: p.production, flag: { key: 'shared' } })
      await flagsOf(h, p.production).delete('shared')
      await stream.waitFor((e) => e.data.includes('"DELETE"'), 5000, from)
      const snapshot = await fetch(`${second.url}/flags/snapshot`, { headers: keyHeader(p.sdkKey) })
      expect(await snapshot.json()).toEqual([])
    } finally {
      stream.close()
    }
  })
})

describe('/stream keep-alives', () => {
  let db: TestDatabase
  let runtime: ServiceRuntime
  let server: RunningServer
  let key: string
  beforeAll(async () => {
    db = await createTestDatabase('sqlite')
    runtime = await openServiceRuntime({ databaseUrl: db.url, clock: () => T0 })
    const setup = await ensureWorkspace(runtime, {
      adminEmail: 'a@example.com',
      adminPassword: 'password-123',
      workspaceName: 'K',
      adminName: 'A',
    })
    if (setup.status !== 'created') throw new Error('setup')
    key = setup.sdkKey
    // The service app with the feature's stream settings set (the default interval is 15 s).
    const app = express()
    mountFlagFeature(app, runtime, { auth: authenticate(runtime), routerOptions: {}, flags: { keepAliveMs: 40 } })
    app.use(notFound)
    app.use(errorHandler())
    server = await listen(app)
  })
  afterAll(async () => {
    await server?.close()
    await runtime?.close()
    await db?.drop()
  })

  it('sends keep-alive comments at the configured interval (15 s by default), ignored by event parsers', async () => {
    const stream = await openSse(`${server.url}/stream`, keyHeader(key))
    try {
      await stream.waitFor((e) => e.event === 'ready')
      await expect
        .poll(() => stream.raw().split(': keep-alive').length - 1, { timeout: 3000 })
        .toBeGreaterThanOrEqual(2)
      expect(stream.events.map((e) => e.event)).toEqual(['connected', 'ready'])
    } finally {
      stream.close()
    }
  })
})
