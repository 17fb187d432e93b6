import { DIALECTS } from '@flagsync/test-support/databases'
import { startTestServer, type TestServer } from '@flagsync/test-support/test-server'
import { afterEach, describe, expect, it } from 'vitest'

const flag = (key: string, extra: Record<string, unknown> = {}) => ({
  key,
  is_enabled: true,
  rollout_percentage: null,
  description: null,
  rules: [],
  ...extra,
})

describe.each(DIALECTS)('audit trail and revisions on %s', (dialect) => {
  const servers: TestServer[] = []
  afterEach(async () => {
    await Promise.all(servers.splice(0).map((s) => s.dispose()))
  })
  async function start(options: Parameters<typeof startTestServer>[0] = {}): Promise<TestServer> {
    const server = await startTestServer({ dialect, ...options })
    servers.push(server)
    return server
  }
  const json = async (res: Response) => ({ status: res.status, body: await res.json() })

  it('returns every flag with its revision on REST and accepts it back on input (GET → edit → POST)', async () => {
    const s = await start()
    await s.request('/api/flags', { method: 'POST', body: { key: 'a', is_enabled: true } })
    await s.request('/api/flags', { method: 'POST', body: { key: 'b', is_enabled: true } })
    await s.request('/api/flags/a', { method: 'PATCH', body: { description: 'x' } })
    expect(await (await s.request('/api/flags')).json()).toEqual([
      flag('a', { description: 'x', revision: 3 }),
      flag('b', { revision: 2 }),
    ])
    const a = await (await s.request('/api/flags/a')).json()
    expect(a.revision).toBe(3)
    // The round trip: the revision is accepted and ignored, never stored as a field.
    const put = await json(await s.request('/api/flags', { method: 'POST', body: { ...a, is_enabled: false } }))
    expect(put).toEqual({ status: 200, body: flag('a', { description: 'x', is_enabled: false, revision: 4 }) })
    const patched = await json(await s.request('/api/flags/a', { method: 'PATCH', body: { revision: 1, rules: [] } }))
    // rules was [] already: a write that changes nothing keeps the flag's revision (and records nothing).
    expect(patched).toEqual({ status: 200, body: flag('a', { description: 'x', is_enabled: false, revision: 4 }) })
    expect(await s.runtime.store.get('a')).toEqual(flag('a', { description: 'x', is_enabled: false }))
  })

  it('records actor, declared actor and route for API writes, and serves a flag history newest first', async () => {
    const s = await start({ sdkKey: 'k3y' })
    await s.request('/api/flags', { method: 'POST', body: { key: 'f', is_enabled: true } })
    await s.request('/api/flags/f', {
      method: 'PATCH',
      body: { rollout_percentage: 20 },
      headers: { 'X-Flagsync-Actor': 'alice' },
    })
    await s.request('/api/flags/f', { method: 'DELETE' })
    const { status, body } = await json(await s.request('/api/flags/f/history'))
    expect(status).toBe(200)
    expect(body.nextCursor).toBeNull()
    expect(body.entries).toEqual([
      {
        revision: 3,
        time: expect.any(String),
        key: 'f',
        action: 'delete',
        before: flag('f', { rollout_percentage: 20 }),
        beforeKnown: true,
        after: null,
        changedFields: ['key', 'is_enabled', 'rollout_percentage', 'description', 'rules'],
        actor: { name: 'sdk-key', verified: true },
        declaredActor: null,
        source: { type: 'api', route: 'DELETE /api/flags/:key' },
      },
      expect.objectContaining({
        revision: 2,
        action: 'update',
        changedFields: ['rollout_percentage'],
        declaredActor: { name: 'alice', verified: false },
        source: { type: 'api', route: 'PATCH /api/flags/:key' },
      }),
      expect.objectContaining({ revision: 1, action: 'create', before: null, after: flag('f') }),
    ])
    expect(Date.parse(body.entries[0].time)).not.toBeNaN()
    // The history needs the key like every other route.
    expect((await s.request('/api/flags/f/history', { headers: { Authorization: 'Bearer wrong' } })).status).toBe(401)
  })

  it('records the sync batch id and operation index of receiver writes', async () => {
    const s = await start({ sdkKey: 'k3y' })
    const res = await s.request('/sync', {
      method: 'POST',
      body: {
        batchId: 'b-1',
        operations: [
          { action: 'insert', collection: 'flags', recordId: 'x', record: { is_enabled: true } },
          { action: 'insert', collection: 'flags', recordId: 'y', record: { is_enabled: true } },
        ],
      },
    })
    expect(res.status).toBe(200)
    const { body } = await json(await s.request('/api/changes'))
    expect(
      body.entries.map((e: { key: string; source: unknown; actor: unknown }) => [e.key, e.source, e.actor]),
    ).toEqual([
      ['y', { type: 'sync', batchId: 'b-1', operationIndex: 1 }, { name: 'sdk-key', verified: true }],
      ['x', { type: 'sync', batchId: 'b-1', operationIndex: 0 }, { name: 'sdk-key', verified: true }],
    ])
  })

  it('pages /api/changes newest first with a cursor, since= as a lower bound, deleted flags included', async () => {
    const s = await start()
    for (let i = 0; i < 5; i++)
      await s.request('/api/flags', { method: 'POST', body: { key: `k${i}`, is_enabled: true } })
    await s.request('/api/flags/k0', { method: 'DELETE' })
    const first = await json(await s.request('/api/changes?limit=4'))
    expect(first.body.entries.map((e: { revision: number }) => e.revision)).toEqual([6, 5, 4, 3])
    expect(first.body.entries[0]).toMatchObject({ key: 'k0', action: 'delete' })
    expect(first.body.nextCursor).toBe('3')
    const second = await json(await s.request(`/api/changes?limit=4&cursor=${first.body.nextCursor}`))
    expect(second.body.entries.map((e: { revision: number }) => e.revision)).toEqual([2, 1])
    expect(second.body.nextCursor).toBeNull()
    const since = await json(await s.request('/api/changes?since=4'))
    expect(since.body.entries.map((e: { revision: number }) => e.revision)).toEqual([6, 5])
  })

  it('answers 422 for a bad query, 404 for an impossible key, 405 for other methods', async () => {
    const s = await start()
    for (const query of [
      'limit=0',
      'limit=1001',
      'limit=abc',
      'cursor=-1',
      'since=1.5',
      'limit=1&limit=2',
      'sort=asc',
    ]) {
      const res = await json(await s.request(`/api/changes?${query}`))
      expect(res.status, query).toBe(422)
      expect(res.body.code, query).toBe('validation_failed')
    }
    expect((await s.request('/api/flags/f/history?limit=x')).status).toBe(422)
    expect((await s.request('/api/flags/no%20such/history')).status).toBe(404)
    expect((await s.request('/api/changes', { method: 'POST', body: {} })).status).toBe(405)
    // A key that never existed has an empty history.
    expect(await (await s.request('/api/flags/never/history')).json()).toEqual({ entries: [], nextCursor: null })
  })

  it('prunes entries past AUDIT_RETENTION_DAYS in the background but keeps each flag’s latest state', async () => {
    let now = Date.UTC(2026, 0, 1)
    const s = await start({ env: { AUDIT_RETENTION_DAYS: '1' }, extras: { storeOptions: { clock: () => now } } })
    await s.request('/api/flags', { method: 'POST', body: { key: 'kept', is_enabled: true } })
    await s.request('/api/flags', { method: 'POST', body: { key: 'gone', is_enabled: true } })
    await s.request('/api/flags/gone', { method: 'DELETE' })
    await s.request('/api/flags/kept', { method: 'PATCH', body: { description: 'v2' } })
    // Past both the audit retention and the change log's own 7 days for followers.
    now += 10 * 24 * 60 * 60 * 1000
    // Retention also keeps the newest 1 000 entries for followers: none of these 4 go yet.
    expect(await s.runtime.prune()).toBe(0)
    await s.runtime.store.write(async (w) => {
      for (let i = 0; i < 1000; i++) w.put({ key: `filler-${i}`, is_enabled: true })
    })
    now += 10 * 24 * 60 * 60 * 1000
    // kept's first row (superseded), gone's two rows; kept's latest row and filler's newest 1 000 stay.
    expect(await s.runtime.prune()).toBe(3)
    const history = await json(await s.request('/api/flags/kept/history'))
    expect(history.body.entries).toEqual([
      expect.objectContaining({ revision: 4, beforeKnown: false, action: 'update' }),
    ])
    expect((await json(await s.request('/api/flags/gone/history'))).body.entries).toEqual([])
  })
})
