import knexFactory from 'knex'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type Harness, startHarness } from './harness.js'

// Another connection holding SQLite's write lock (another instance, or the
// impression ingest's own connection under load) must make service writes a
// retryable 503, never a 500, and nothing may be half-written.
describe('a SQLite write lock held by another connection', () => {
  let h: Harness
  beforeAll(async () => {
    h = await startHarness('sqlite', { busyTimeoutMs: 100 })
  })
  afterAll(async () => {
    await h?.dispose()
  })

  it('answers 503 with Retry-After while it is held, and the same request succeeds once it is released', async () => {
    const filename = h.databaseUrl.replace(/^sqlite:/, '')
    const other = knexFactory({
      client: 'sqlite3',
      connection: { filename },
      useNullAsDefault: true,
      pool: { min: 1, max: 1 },
    })
    const conn = await other.client.acquireConnection()
    try {
      await other.raw('begin immediate').connection(conn)
      // Through the flag store's write (a project) and straight through knex (a token): both are 503s.
      const project = await h.call('/api/projects', { method: 'POST', as: h.admin, body: { name: 'Held' } })
      const token = await h.call('/api/tokens', {
        method: 'POST',
        as: h.admin,
        body: { name: 'held', scope: 'read_only' },
      })
      for (const busy of [project, token]) {
        expect(busy.status).toBe(503)
        expect(busy.body).toMatchObject({ error: expect.any(String), code: 'unavailable' })
        expect(busy.res.headers.get('retry-after')).toBe('1')
      }
      await other.raw('rollback').connection(conn)
      const projects = (await h.call('/api/projects', { as: h.admin })).body as Array<{ name: string }>
      expect(projects.map((p) => p.name)).not.toContain('Held')
      const tokens = (await h.call('/api/tokens', { as: h.admin })).body as Array<{ name: string }>
      expect(tokens.map((t) => t.name)).not.toContain('held')
      expect((await h.call('/api/projects', { method: 'POST', as: h.admin, body: { name: 'Held' } })).status).toBe(200)
      expect(
        (await h.call('/api/tokens', { method: 'POST', as: h.admin, body: { name: 'held', scope: 'read_only' } }))
          .status,
      ).toBe(200)
    } finally {
      await other.client.releaseConnection(conn)
      await other.destroy()
    }
  })
})
