import { DIALECTS } from '@flagsync/test-support/databases'
import { startTestServer, type TestServer } from '@flagsync/test-support/test-server'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'

describe.each(DIALECTS)('flat API on %s', (dialect) => {
  let server: TestServer
  beforeEach(async () => {
    server = await startTestServer({ dialect })
  })
  afterEach(async () => {
    await server.dispose()
  })

  const post = (body: unknown) => server.request('/api/flags', { method: 'POST', body })
  const patch = (key: string, body: unknown) => server.request(`/api/flags/${key}`, { method: 'PATCH', body })

  describe('GET /health', () => {
    it('answers 200 OK as plain text', async () => {
      const res = await server.request('/health')
      expect(res.status).toBe(200)
      expect(res.headers.get('content-type')).toMatch(/^text\/plain/)
      expect(await res.text()).toBe('OK')
    })
  })

  describe('POST /api/flags', () => {
    it('creates a flag with defaults filled', async () => {
      const res = await post({ key: 'dark-mode', is_enabled: true })
      expect(res.status).toBe(200)
      expect(await res.json()).toEqual({
        key: 'dark-mode',
        is_enabled: true,
        rollout_percentage: null,
        description: null,
        rules: [],
        revision: 1, // read-only: the change-log revision of its last change
      })
    })

    it('replaces a flag entirely when the key exists', async () => {
      await post({ key: 'f', is_enabled: true, description: 'old', rollout_percentage: 10 })
      const res = await post({ key: 'f', is_enabled: false })
      expect(await res.json()).toEqual({
        key: 'f',
        is_enabled: false,
        rollout_percentage: null,
        description: null,
        rules: [],
        revision: 2,
      })
      expect(await (await server.request('/api/flags/f')).json()).toMatchObject({ description: null })
    })
  })

  describe('GET /api/flags and /api/flags/:key', () => {
    it('lists flags from the live set and serves one by key', async () => {
      await post({ key: 'b', is_enabled: true })
      await post({ key: 'a', is_enabled: false, rules: [{ attribute: 'plan', operator: 'equals', values: ['pro'] }] })
      const list = await server.request('/api/flags')
      expect(list.status).toBe(200)
      expect((await list.json()).map((f: { key: string }) => f.key)).toEqual(['a', 'b'])
      const one = await server.request('/api/flags/a')
      expect(await one.json()).toMatchObject({ key: 'a', rules: [{ attribute: 'plan' }] })
    })

    it('answers 404 JSON for a missing flag', async () => {
      const res = await server.request('/api/flags/missing')
      expect(res.status).toBe(404)
      expect(await res.json()).toMatchObject({ error: expect.stringContaining('missing'), code: 'not_found' })
    })

    it('supports conditional GET of the list with an ETag that changes on write', async () => {
      await post({ key: 'a', is_enabled: true })
      const first = await server.request('/api/flags')
      const etag = first.headers.get('etag') as string
      expect(etag).toBeTruthy()
      expect((await server.request('/api/flags', { headers: { 'If-None-Match': etag } })).status).toBe(304)
      await patch('a', { is_enabled: false })
      const after = await server.request('/api/flags', { headers: { 'If-None-Match': etag } })
      expect(after.status).toBe(200)
      expect(after.headers.get('etag')).not.toBe(etag)
    })
  })

  describe('PATCH /api/flags/:key', () => {
    beforeEach(async () => {
      await post({ key: 'f', is_enabled: true, description: 'keep', rollout_percentage: 40 })
    })

    it('changes only the given fields', async () => {
      const res = await patch('f', { is_enabled: false })
      expect(res.status).toBe(200)
      expect(await res.json()).toEqual({
        key: 'f',
        is_enabled: false,
        rollout_percentage: 40,
        description: 'keep',
        rules: [],
        revision: 2,
      })
    })

    it('clears nullable fields with null and replaces arrays', async () => {
      await patch('f', { rules: [{ attribute: 'a', operator: 'equals', values: ['1'] }] })
      const res = await patch('f', { description: null, rollout_percentage: null, rules: [] })
      expect(await res.json()).toMatchObject({ description: null, rollout_percentage: null, rules: [] })
    })

    it.each([
      ['null for a required field', { is_enabled: null }, 'is_enabled'],
      ['a key change', { key: 'other' }, 'key'],
      ['a typo field', { is_enable: false }, 'is_enable'],
      ['rollout out of range', { rollout_percentage: 101 }, 'rollout_percentage'],
      ['a non-object body', [1, 2], '(root)'],
    ])('rejects %s with 422 naming the field and changes nothing', async (_name, body, field) => {
      const res = await patch('f', body)
      expect(res.status).toBe(422)
      const json = await res.json()
      expect(json.code).toBe('validation_failed')
      expect(json.issues.map((i: { path: string }) => i.path)).toContain(field)
      expect(await (await server.request('/api/flags/f')).json()).toMatchObject({
        is_enabled: true,
        description: 'keep',
      })
    })

    it('answers 404 for a missing flag', async () => {
      expect((await patch('missing', { is_enabled: false })).status).toBe(404)
    })
  })

  describe('DELETE /api/flags/:key', () => {
    it('removes the flag with 204 and is idempotent', async () => {
      await post({ key: 'f', is_enabled: true })
      expect((await server.request('/api/flags/f', { method: 'DELETE' })).status).toBe(204)
      expect((await server.request('/api/flags/f')).status).toBe(404)
      expect((await server.request('/api/flags/f', { method: 'DELETE' })).status).toBe(204)
    })
  })

  describe('bad input never changes the store and never answers 5xx', () => {
    it.each([
      ['an invalid field type', { key: 'x', is_enabled: 'yes' }, 'is_enabled'],
      ['a missing required field', { key: 'x' }, 'is_enabled'],
      ['a typo field', { key: 'x', is_enabled: true, is_enable: true }, 'is_enable'],
      [
        'a bad operator',
        { key: 'x', is_enabled: true, rules: [{ attribute: 'a', operator: 'near', values: ['1'] }] },
        'rules[0].operator',
      ],
      ['a key with spaces', { key: 'a b', is_enabled: true }, 'key'],
      ['a fractional rollout', { key: 'x', is_enabled: true, rollout_percentage: 1.5 }, 'rollout_percentage'],
      ['an array body', [{ key: 'x', is_enabled: true }], '(root)'],
      ['a string body', 'just text', '(root)'],
    ])('422 for %s', async (_name, body, field) => {
      const res = await post(typeof body === 'string' ? JSON.stringify(body) : body)
      expect(res.status).toBe(422)
      const json = await res.json()
      expect(json.error).toContain(field)
      expect(json.issues.map((i: { path: string }) => i.path)).toContain(field)
      expect(await (await server.request('/api/flags')).json()).toEqual([])
    })

    it("answers zod's English messages, word for word (the protocol's zod/mini schemas carry no locale)", async () => {
      const res = await post({ key: 'x', is_enabled: 'yes', rollout_percentage: 101 })
      expect(res.status).toBe(422)
      expect(await res.json()).toEqual({
        error: 'invalid flag: is_enabled: Invalid input: expected boolean, received string',
        code: 'validation_failed',
        issues: [
          { path: 'is_enabled', message: 'Invalid input: expected boolean, received string' },
          { path: 'rollout_percentage', message: 'Too big: expected number to be <=100' },
        ],
      })
    })

    it('400 for malformed JSON', async () => {
      const res = await post('{"key": "x",')
      expect(res.status).toBe(400)
      expect(await res.json()).toMatchObject({ code: 'bad_request', error: expect.any(String) })
    })

    it('413 for a body over the 1 MB limit', async () => {
      const res = await post({ key: 'x', is_enabled: true, description: 'x'.repeat(1_100_000) })
      expect(res.status).toBe(413)
      expect(await res.json()).toMatchObject({ code: 'payload_too_large' })
    })

    it('415 for a body that is not JSON', async () => {
      const res = await server.request('/api/flags', {
        method: 'POST',
        body: 'key=x',
        headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      })
      expect(res.status).toBe(415)
    })

    it('404 JSON for an unknown route and 405 for a wrong method', async () => {
      const unknown = await server.request('/api/nope')
      expect(unknown.status).toBe(404)
      expect(await unknown.json()).toMatchObject({ code: 'not_found' })
      const wrong = await server.request('/api/flags', { method: 'PUT', body: {} })
      expect(wrong.status).toBe(405)
      expect(wrong.headers.get('allow')).toBe('GET, POST')
    })
  })

  describe('restart', () => {
    it('keeps every flag in the SQLite file across a restart', async () => {
      await post({ key: 'a', is_enabled: true, description: 'persisted' })
      await post({ key: 'b', is_enabled: false })
      await server.request('/api/flags/b', { method: 'DELETE' })
      await server.stop()
      const again = await startTestServer({ databaseUrl: server.databaseUrl })
      try {
        expect(await (await again.request('/api/flags')).json()).toEqual([
          { key: 'a', is_enabled: true, rollout_percentage: null, description: 'persisted', rules: [], revision: 1 },
        ])
      } finally {
        await again.stop()
      }
    })
  })
})
