import { DIALECTS } from '@flagsync/test-support/databases'
import { streamServers } from '@flagsync/test-support/stream-servers'
import { describe, expect, it } from 'vitest'

describe.each(DIALECTS)('stream on %s', (dialect) => {
  const { start, subscribe } = streamServers(dialect)
  const data = (e: { data: string }) => JSON.parse(e.data)

  describe('GET /stream', () => {
    it('sends connected, one UPSERT per existing flag, then live UPSERT and DELETE with revision ids', async () => {
      const server = await start()
      await server.request('/api/flags', { method: 'POST', body: { key: 'a', is_enabled: true } })
      await server.request('/api/flags', { method: 'POST', body: { key: 'b', is_enabled: false } })
      const stream = await subscribe(server)
      expect(stream.status).toBe(200)
      const boot = await stream.waitForCount(3)
      expect(boot.map((e) => e.event)).toEqual(['connected', 'update', 'update'])
      expect(boot[0]?.data).toBe('true')
      expect(boot.slice(1).map(data)).toEqual([
        {
          type: 'UPSERT',
          flag: { key: 'a', is_enabled: true, rollout_percentage: null, description: null, rules: [], revision: 1 },
        },
        {
          type: 'UPSERT',
          flag: { key: 'b', is_enabled: false, rollout_percentage: null, description: null, rules: [], revision: 2 },
        },
      ])

      await server.request('/api/flags', { method: 'POST', body: { key: 'c', is_enabled: true } })
      await server.request('/api/flags/c', { method: 'PATCH', body: { description: 'line one\nline two' } })
      await server.request('/api/flags/a', { method: 'DELETE' })
      const live = (await stream.waitForCount(6)).slice(3)
      expect(live.map(data)).toEqual([
        { type: 'UPSERT', flag: expect.objectContaining({ key: 'c', description: null, revision: 3 }) },
        { type: 'UPSERT', flag: expect.objectContaining({ key: 'c', description: 'line one\nline two', revision: 4 }) },
        { type: 'DELETE', key: 'a' },
      ])
      const ids = live.map((e) => Number(e.id))
      expect(ids).toEqual([3, 4, 5])
    })

    it('sends keep-alive comments at the configured interval', async () => {
      const server = await start({ keepAliveMs: 50 })
      const stream = await subscribe(server)
      await stream.waitForCount(1)
      await new Promise((r) => setTimeout(r, 180))
      expect(stream.raw().match(/^: keep-alive$/gm)?.length ?? 0).toBeGreaterThanOrEqual(2)
      expect(stream.events).toHaveLength(1) // comments are not events
    })

    it('replays connected and every current flag on reconnect', async () => {
      const server = await start()
      const first = await subscribe(server)
      await server.request('/api/flags', { method: 'POST', body: { key: 'a', is_enabled: true } })
      await server.request('/api/flags', { method: 'POST', body: { key: 'b', is_enabled: true } })
      await server.request('/api/flags/a', { method: 'DELETE' })
      await first.waitForCount(4)
      first.close()
      const second = await subscribe(server)
      const boot = await second.waitForCount(2)
      expect(boot.map((e) => e.event)).toEqual(['connected', 'update'])
      expect(data(boot[1] as { data: string })).toMatchObject({ type: 'UPSERT', flag: { key: 'b' } })
    })

    it('frees a subscriber as soon as its client goes away', async () => {
      const server = await start()
      const stream = await subscribe(server)
      await stream.waitForCount(1)
      expect(server.runtime.hub.size()).toBe(1)
      stream.close()
      await expect.poll(() => server.runtime.hub.size(), { timeout: 2000 }).toBe(0)
    })

    it('delivers changes applied through the receiver', async () => {
      const server = await start()
      const stream = await subscribe(server)
      await stream.waitForCount(1)
      const res = await server.request('/sync', {
        method: 'POST',
        body: {
          batchId: 'b-1',
          operations: [{ action: 'insert', collection: 'flags', recordId: 'from-sync', record: { is_enabled: true } }],
        },
      })
      expect(res.status).toBe(200)
      const event = await stream.waitFor((e) => e.event === 'update')
      expect(data(event)).toMatchObject({ type: 'UPSERT', flag: { key: 'from-sync' } })
    })
  })

  describe('authentication with SDK_KEY', () => {
    const key = 'sk_test_0123456789'

    it('requires the bearer key on every route but /health', async () => {
      const server = await start({ sdkKey: key })
      const anonymous = { Authorization: '' }
      for (const path of ['/api/flags', '/api/flags/x', '/stream']) {
        const res = await fetch(`${server.url}${path}`)
        expect(res.status, path).toBe(401)
        expect(await res.json()).toMatchObject({ code: 'unauthorized', error: expect.any(String) })
      }
      const wrong = await fetch(`${server.url}/api/flags`, { headers: { Authorization: 'Bearer nope' } })
      expect(wrong.status).toBe(401)
      expect((await server.request('/sync', { method: 'POST', body: {}, headers: anonymous })).status).toBe(401)
      expect((await fetch(`${server.url}/health`)).status).toBe(200)
      expect((await server.request('/api/flags')).status).toBe(200)
      const stream = await subscribe(server, { Authorization: `Bearer ${key}` })
      expect(stream.status).toBe(200)
    })

    it('lets everything through when no key is configured', async () => {
      const server = await start()
      expect((await fetch(`${server.url}/api/flags`)).status).toBe(200)
    })
  })
})
