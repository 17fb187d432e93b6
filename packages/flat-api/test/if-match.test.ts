import { DIALECTS } from '@flagsync/test-support/databases'
import { startTestServer, type TestServer } from '@flagsync/test-support/test-server'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'

const FLAG = { key: 'dark-mode', is_enabled: true, description: 'night', rollout_percentage: null, rules: [] }

describe.each(DIALECTS)('flat API: If-Match on flag writes on %s', (dialect) => {
  let server: TestServer
  beforeEach(async () => {
    server = await startTestServer({ dialect })
    expect((await server.request('/api/flags', { method: 'POST', body: FLAG })).status).toBe(200) // revision 1
    // A colleague's change after revision 1.
    const theirs = await server.request('/api/flags/dark-mode', { method: 'PATCH', body: { description: 'day' } })
    expect((await theirs.json()).revision).toBe(2)
  })
  afterEach(async () => {
    await server.dispose()
  })

  const history = async () =>
    ((await (await server.request('/api/flags/dark-mode/history')).json()) as { entries: unknown[] }).entries
  const patch = (body: unknown, ifMatch?: string) =>
    server.request('/api/flags/dark-mode', {
      method: 'PATCH',
      body,
      headers: ifMatch === undefined ? {} : { 'If-Match': ifMatch },
    })

  it('PATCH with the current revision as If-Match applies and answers the new revision as ETag', async () => {
    const res = await patch({ is_enabled: false }, '"2"')
    expect(res.status).toBe(200)
    expect(res.headers.get('etag')).toBe('"3"')
    expect(await res.json()).toEqual({ ...FLAG, description: 'day', is_enabled: false, revision: 3 })
  })

  it('PATCH with a stale base on another field merges with what changed since', async () => {
    const res = await patch({ is_enabled: false }, '"1"')
    expect(res.status).toBe(200)
    expect(res.headers.get('etag')).toBe('"3"')
    expect(await res.json()).toMatchObject({ description: 'day', is_enabled: false, revision: 3 })
  })

  it('PATCH with a stale base on a field changed since is a 409 with the conflict and writes nothing', async () => {
    const before = await history()
    const res = await patch({ description: 'dusk' }, '"1"')
    expect(res.status).toBe(409)
    const body = await res.json()
    expect(body.code).toBe('conflict')
    expect(body.error).toContain('description also changed after revision 1')
    expect(body.conflicts).toEqual([
      {
        operationIndex: 0,
        collection: 'flags',
        recordId: 'dark-mode',
        kind: 'field',
        fields: ['description'],
        base: expect.objectContaining({ description: 'night' }),
        current: expect.objectContaining({ description: 'day' }),
        currentRevision: 2,
        reason: expect.stringContaining('description'),
      },
    ])
    expect(await history()).toEqual(before)
    expect(await (await server.request('/api/flags/dark-mode')).json()).toMatchObject({
      description: 'day',
      revision: 2,
    })
  })

  it('DELETE with a stale base is a 409 and keeps the flag; with the current one it deletes', async () => {
    const stale = await server.request('/api/flags/dark-mode', { method: 'DELETE', headers: { 'If-Match': '"1"' } })
    expect(stale.status).toBe(409)
    expect((await stale.json()).conflicts[0]).toMatchObject({ kind: 'field', fields: ['description'] })
    expect((await server.request('/api/flags/dark-mode')).status).toBe(200)
    const current = await server.request('/api/flags/dark-mode', { method: 'DELETE', headers: { 'If-Match': '"2"' } })
    expect(current.status).toBe(204)
    expect((await server.request('/api/flags/dark-mode')).status).toBe(404)
  })

  it('POST replacing a flag deleted since its base is a 409 of kind deleted', async () => {
    expect((await server.request('/api/flags/dark-mode', { method: 'DELETE' })).status).toBe(204) // revision 3
    const res = await server.request('/api/flags', { method: 'POST', body: FLAG, headers: { 'If-Match': '"2"' } })
    expect(res.status).toBe(409)
    const body = await res.json()
    expect(body.code).toBe('conflict')
    expect(body.conflicts[0]).toMatchObject({ kind: 'deleted', current: null, currentRevision: null })
    expect((await server.request('/api/flags/dark-mode')).status).toBe(404)
  })

  it('a malformed If-Match is a 422 naming the invalid base revision, on every write', async () => {
    const headers = { 'If-Match': 'yesterday' }
    for (const res of [
      await patch({ is_enabled: false }, 'yesterday'),
      await server.request('/api/flags/dark-mode', { method: 'DELETE', headers }),
      await server.request('/api/flags', { method: 'POST', body: FLAG, headers }),
    ]) {
      expect(res.status).toBe(422)
      const body = await res.json()
      expect(body.code).toBe('validation_failed')
      expect(body.error).toMatch(/^invalid base revision: headers\.if-match/)
    }
    expect(await history()).toHaveLength(2)
  })

  it('without If-Match (or with *) a write overwrites as before, and reads carry the revision as ETag', async () => {
    const res = await patch({ description: 'dusk' })
    expect(res.status).toBe(200)
    expect(res.headers.get('etag')).toBe('"3"')
    expect(await res.json()).toMatchObject({ description: 'dusk', revision: 3 })
    expect((await patch({ description: 'dawn' }, '*')).status).toBe(200)
    // The fast path answers a plain GET; Express one with an Origin (CORS requests are its).
    // no-cache: a cache holding the flag asks again before reusing it, on both paths.
    const viaFastPath = await server.request('/api/flags/dark-mode')
    expect(viaFastPath.headers.get('etag')).toBe('"4"')
    expect(viaFastPath.headers.get('cache-control')).toBe('no-cache')
    const viaExpress = await server.request('/api/flags/dark-mode', { headers: { Origin: 'https://example.com' } })
    expect(viaExpress.headers.get('etag')).toBe('"4"')
    expect(viaExpress.headers.get('cache-control')).toBe('no-cache')
  })
})
