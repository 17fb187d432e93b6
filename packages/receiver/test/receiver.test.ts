import { DIALECTS } from '@flagsync/test-support/databases'
import { afterEach, describe, expect, it } from 'vitest'
import {
  batch,
  closeAllHarnesses,
  flagsOf,
  fullFlag,
  type HarnessOptions,
  insert,
  remove,
  startHarness as startOn,
  update,
} from './harness.js'

afterEach(closeAllHarnesses)

describe.each(DIALECTS)('on %s', (dialect) => {
  const startHarness = (options: HarnessOptions = {}) => startOn({ dialect, ...options })

  describe('POST /sync: the flags collection', () => {
    it('applies insert, update and delete, and answers {batchId, applied}', async () => {
      const h = await startHarness()
      const first = await h.post(
        batch(
          [
            insert('a', { is_enabled: true, description: 'first' }),
            insert('b', { key: 'b', is_enabled: false, rollout_percentage: 25 }),
            insert('c', { is_enabled: true }),
          ],
          'b-1',
        ),
      )
      expect(first.status).toBe(200)
      expect(first.body).toEqual({ batchId: 'b-1', applied: 3, revision: 3 })
      expect(await flagsOf(h.store)).toEqual({
        a: fullFlag('a', { description: 'first' }),
        b: fullFlag('b', { is_enabled: false, rollout_percentage: 25 }),
        c: fullFlag('c'),
      })

      const second = await h.post(
        batch(
          [
            update('a', { rollout_percentage: 50, description: null }),
            update('b', { rules: [{ attribute: 'country', operator: 'equals', values: ['NL'] }] }),
            remove('c'),
          ],
          'b-2',
        ),
      )
      expect(second.status).toBe(200)
      expect(second.body).toEqual({ batchId: 'b-2', applied: 3, revision: 6 })
      expect(await flagsOf(h.store)).toEqual({
        // merge semantics: named fields change, null clears, the rest stays
        a: fullFlag('a', { rollout_percentage: 50 }),
        b: fullFlag('b', {
          is_enabled: false,
          rollout_percentage: 25,
          rules: [{ attribute: 'country', operator: 'equals', values: ['NL'] }],
        }),
      })

      // Each committed change is in the log with consecutive revisions, deletes as null.
      const log = await h.store.changesSince(0)
      expect(log.map((c) => [c.revision, c.key, c.flag === null ? 'DELETE' : 'UPSERT'])).toEqual([
        [1, 'a', 'UPSERT'],
        [2, 'b', 'UPSERT'],
        [3, 'c', 'UPSERT'],
        [4, 'a', 'UPSERT'],
        [5, 'b', 'UPSERT'],
        [6, 'c', 'DELETE'],
      ])
    })

    it('insert replaces an existing flag entirely (omitted fields take their defaults)', async () => {
      const h = await startHarness()
      await h.post(batch([insert('a', { is_enabled: false, description: 'old', rollout_percentage: 10 })]))
      const res = await h.post(batch([insert('a', { is_enabled: true })]))
      expect(res.status).toBe(200)
      expect(await h.store.get('a')).toEqual(fullFlag('a'))
    })

    it('deleting a flag that does not exist is not an error and logs no change', async () => {
      const h = await startHarness()
      const res = await h.post(batch([remove('never-existed')], 'del-missing'))
      expect(res.status).toBe(200)
      expect(res.body).toEqual({ batchId: 'del-missing', applied: 1 })
      expect(await h.store.changesSince(0)).toEqual([])
    })

    it('deleting a key no flag can have is a 422 naming the operation, and the batch applies nothing', async () => {
      const h = await startHarness()
      for (const bad of ['../../etc', 'a b', 'Ünïcode']) {
        const res = await h.post(batch([insert('fine', { is_enabled: true }), remove(bad)]))
        expect(res.status, bad).toBe(422)
        expect(res.body).toMatchObject({ code: 'validation_failed', operationIndex: 1 })
        expect(res.body.issues.map((i: { path: string }) => i.path)).toContain('operations[1].recordId')
      }
      expect(await h.store.get('fine')).toBeUndefined()
    })

    it('operations of one batch see each other in order (insert then update then delete of another)', async () => {
      const h = await startHarness()
      const res = await h.post(
        batch([
          insert('a', { is_enabled: false }),
          update('a', { is_enabled: true }),
          insert('tmp', { is_enabled: true }),
          remove('tmp'),
        ]),
      )
      expect(res.status).toBe(200)
      expect(await flagsOf(h.store)).toEqual({ a: fullFlag('a') })
      // net changes only: one UPSERT of a; tmp was created and deleted within the batch
      expect((await h.store.changesSince(0)).map((c) => [c.key, c.flag])).toEqual([['a', fullFlag('a')]])
    })

    it('rejects the update of a missing flag with 422 naming the operation, and applies nothing', async () => {
      const h = await startHarness()
      const res = await h.post(batch([insert('a', { is_enabled: true }), update('missing', { is_enabled: false })]))
      expect(res.status).toBe(422)
      expect(res.body).toMatchObject({
        code: 'validation_failed',
        operationIndex: 1,
        issues: [{ path: 'operations[1].recordId', message: expect.stringContaining('no flag') }],
      })
      expect(res.body.error).toContain('operation 1')
      expect(await flagsOf(h.store)).toEqual({})
    })

    it('a bad operation in the middle leaves the store, the change log and the batch ids untouched', async () => {
      const h = await startHarness()
      await h.post(batch([insert('keep', { is_enabled: true, description: 'before' })]))
      const before = await flagsOf(h.store)
      const logBefore = await h.store.changesSince(0)

      const ops = [
        update('keep', { description: 'changed' }),
        insert('new-1', { is_enabled: true }),
        insert('bad', { is_enabled: 'yes' }),
        remove('keep'),
        insert('new-2', { is_enabled: true }),
      ]
      const rejected = await h.post(batch(ops, 'mixed'))
      expect(rejected.status).toBe(422)
      expect(rejected.body).toMatchObject({ operationIndex: 2, issues: [{ path: 'operations[2].record.is_enabled' }] })
      expect(typeof rejected.body.error).toBe('string')
      expect(await flagsOf(h.store)).toEqual(before)
      expect(await h.store.changesSince(0)).toEqual(logBefore)

      // Not recorded: the same batchId succeeds once it is valid.
      ops[2] = insert('bad', { is_enabled: true })
      const retried = await h.post(batch(ops, 'mixed'))
      expect(retried.status).toBe(200)
      expect(retried.body).toEqual({
        batchId: 'mixed',
        applied: 5,
        revision: (await h.store.changesSince(0)).at(-1)?.revision,
      })
      expect(Object.keys(await flagsOf(h.store)).sort()).toEqual(['bad', 'new-1', 'new-2'])
    })

    it('replaying an applied batchId answers duplicate and changes nothing, whatever the replay carries', async () => {
      const h = await startHarness()
      const sent = batch([insert('a', { is_enabled: true })], 'once')
      expect((await h.post(sent)).body).toEqual({ batchId: 'once', applied: 1, revision: 1 })
      await h.post(batch([update('a', { description: 'edited later' })]))
      const log = await h.store.changesSince(0)

      const replay = await h.post(sent)
      expect(replay.status).toBe(200)
      expect(replay.body).toEqual({ batchId: 'once', applied: 0, duplicate: true })
      const different = await h.post(batch([remove('a')], 'once'))
      expect(different.body).toEqual({ batchId: 'once', applied: 0, duplicate: true })
      expect(await h.store.get('a')).toEqual(fullFlag('a', { description: 'edited later' }))
      expect(await h.store.changesSince(0)).toEqual(log)
    })

    it('a replayed batchId stays a duplicate after the receiver restarts on the same file', async () => {
      const first = await startHarness()
      const sent = batch([insert('a', { is_enabled: true })], 'survives-restart')
      expect((await first.post(sent)).status).toBe(200)
      await first.stop()
      const second = await startHarness({ databaseUrl: first.databaseUrl })
      expect((await second.post(sent)).body).toEqual({ batchId: 'survives-restart', applied: 0, duplicate: true })
      expect(await second.store.changesSince(0)).toHaveLength(1)
    })

    it('concurrent batches with the same batchId apply exactly once', async () => {
      const h = await startHarness()
      const sent = batch([update('a', { rollout_percentage: 5 })], 'same-id')
      await h.post(batch([insert('a', { is_enabled: true })]))
      const replies = await Promise.all(Array.from({ length: 8 }, () => h.post(sent)))
      expect(replies.map((r) => r.status)).toEqual(Array(8).fill(200))
      expect(replies.filter((r) => r.body.duplicate !== true)).toHaveLength(1)
      expect(replies.filter((r) => r.body.duplicate === true)).toHaveLength(7)
      expect(await h.store.changesSince(0)).toHaveLength(2)
    })
  })

  describe('POST /sync: validation (422 {error, operationIndex, issues})', () => {
    const cases: Array<[string, unknown, { operationIndex?: number; path: string }]> = [
      [
        'unknown action',
        batch([
          insert('a', { is_enabled: true }),
          { action: 'upsert', collection: 'flags', recordId: 'a', record: {} },
        ]),
        { operationIndex: 1, path: 'operations[1].action' },
      ],
      [
        'unknown collection',
        batch([insert('x', { is_enabled: true }, 'nope')]),
        { operationIndex: 0, path: 'operations[0].collection' },
      ],
      ['missing batchId', { operations: [insert('a', { is_enabled: true })] }, { path: 'batchId' }],
      ['operations not an array', { batchId: 'x', operations: {} }, { path: 'operations' }],
      ['unknown envelope field', { batchId: 'x', operations: [], extra: 1 }, { path: 'extra' }],
      [
        'record.key different from recordId',
        batch([insert('a', { key: 'b', is_enabled: true })]),
        { operationIndex: 0, path: 'operations[0].record.key' },
      ],
      [
        'an unknown flag field (typo)',
        batch([insert('a', { is_enable: true })]),
        { operationIndex: 0, path: 'operations[0].record.is_enable' },
      ],
      [
        'an out-of-range field',
        batch([insert('a', { is_enabled: true, rollout_percentage: 101 })]),
        { operationIndex: 0, path: 'operations[0].record.rollout_percentage' },
      ],
      [
        'a recordId that is not a valid flag key',
        batch([insert('has space', { is_enabled: true })]),
        { operationIndex: 0, path: 'operations[0].recordId' },
      ],
      [
        'an insert without record',
        batch([{ action: 'insert', collection: 'flags', recordId: 'a' }]),
        { operationIndex: 0, path: 'operations[0].record' },
      ],
      [
        'a delete carrying data',
        batch([{ action: 'delete', collection: 'flags', recordId: 'a', record: {} }]),
        { operationIndex: 0, path: 'operations[0].record' },
      ],
    ]

    it.each(cases)('%s', async (_name, body, expected) => {
      const h = await startHarness()
      const res = await h.post(body)
      expect(res.status).toBe(422)
      expect(res.body.code).toBe('validation_failed')
      expect(typeof res.body.error).toBe('string')
      expect(res.body.operationIndex).toBe(expected.operationIndex)
      expect(res.body.issues.map((i: { path: string }) => i.path)).toContain(expected.path)
      expect(await flagsOf(h.store)).toEqual({})
    })

    it('update changes are validated like PATCH: key cannot change, required fields cannot be cleared', async () => {
      const h = await startHarness()
      await h.post(batch([insert('a', { is_enabled: true })]))
      const rename = await h.post(batch([update('a', { key: 'b' })]))
      expect(rename.status).toBe(422)
      expect(rename.body).toMatchObject({ operationIndex: 0, issues: [{ path: 'operations[0].changes.key' }] })
      const clear = await h.post(batch([update('a', { is_enabled: null })]))
      expect(clear.status).toBe(422)
      expect(clear.body).toMatchObject({ operationIndex: 0, issues: [{ path: 'operations[0].changes.is_enabled' }] })
      const sameKey = await h.post(batch([update('a', { key: 'a', description: 'ok' })]))
      expect(sameKey.status).toBe(200)
      expect(await h.store.get('a')).toEqual(fullFlag('a', { description: 'ok' }))
    })
  })

  describe('POST /sync: HTTP errors', () => {
    it('400 for malformed JSON', async () => {
      const h = await startHarness()
      const res = await h.post('{"batchId": "x", "operations": [')
      expect(res.status).toBe(400)
      expect(res.body).toMatchObject({ code: 'bad_request', error: expect.any(String) })
    })

    it('415 for a body that is not JSON', async () => {
      const h = await startHarness()
      const res = await h.request('POST', '/sync', { body: 'batchId=x', headers: { 'Content-Type': 'text/plain' } })
      expect(res.status).toBe(415)
      expect(res.body.code).toBe('unsupported_media_type')
    })

    it('405 with Allow: POST for other methods', async () => {
      const h = await startHarness()
      for (const method of ['GET', 'PUT', 'DELETE']) {
        const res = await h.request(method, '/sync')
        expect(res.status).toBe(405)
        expect(res.headers.get('allow')).toBe('POST')
      }
    })

    it('413 for more than 1000 operations by default, and for a custom maxOperations', async () => {
      const h = await startHarness()
      const ops = Array.from({ length: 1001 }, (_, i) => insert(`f${i}`, { is_enabled: true }))
      const res = await h.post(batch(ops))
      expect(res.status).toBe(413)
      expect(res.body).toMatchObject({ code: 'payload_too_large', maxOperations: 1000 })
      expect(await flagsOf(h.store)).toEqual({})
      const exactly = await h.post(batch(ops.slice(0, 1000)))
      expect(exactly.status).toBe(200)
      expect(exactly.body.applied).toBe(1000)

      const small = await startHarness({ maxOperations: 2 })
      expect((await small.post(batch(ops.slice(0, 3)))).status).toBe(413)
      expect((await small.post(batch(ops.slice(0, 2)))).status).toBe(200)
    })

    it('413 for a body over maxBytes, before parsing it', async () => {
      const h = await startHarness({ maxBytes: 1024 })
      const big = batch([insert('a', { is_enabled: true, description: 'x'.repeat(2000) })])
      const res = await h.post(big)
      expect(res.status).toBe(413)
      expect(res.body.code).toBe('payload_too_large')
      expect(await flagsOf(h.store)).toEqual({})
      // A malformed body over the limit is also a 413: the size is checked first.
      expect((await h.post(`{${' '.repeat(2000)}`)).status).toBe(413)
    })

    it('404 as JSON beside the receiver, 200 OK on /health', async () => {
      const h = await startHarness()
      const missing = await h.request('POST', '/elsewhere')
      expect(missing.status).toBe(404)
      expect(missing.body.code).toBe('not_found')
      const health = await h.request('GET', '/health')
      expect(health.status).toBe(200)
      expect(health.body).toBe('OK')
    })
  })

  describe('POST /sync: auth and CORS', () => {
    it('401 without the bearer token or with a wrong one, before the body is read', async () => {
      const h = await startHarness({ token: 'secret-token' })
      const body = batch([insert('a', { is_enabled: true })])
      const missing = await h.post(body)
      expect(missing.status).toBe(401)
      expect(missing.headers.get('www-authenticate')).toBe('Bearer')
      expect(missing.body.code).toBe('unauthorized')
      expect((await h.post(body, { Authorization: 'Bearer wrong' })).status).toBe(401)
      expect((await h.post(body, { Authorization: 'Basic secret-token' })).status).toBe(401)
      expect((await h.post('{not json', {})).status).toBe(401)
      expect(await flagsOf(h.store)).toEqual({})
      const ok = await h.post(body, { Authorization: 'Bearer secret-token' })
      expect(ok.status).toBe(200)
    })

    it('answers CORS preflights for allowed origins only, and exposes Retry-After to them', async () => {
      const h = await startHarness({ corsOrigins: ['https://app.example.com'], token: 't' })
      const preflight = (origin: string) =>
        h.request('OPTIONS', '/sync', {
          headers: {
            Origin: origin,
            'Access-Control-Request-Method': 'POST',
            'Access-Control-Request-Headers': 'authorization,content-type',
          },
        })
      const allowed = await preflight('https://app.example.com')
      expect(allowed.status).toBe(204)
      expect(allowed.headers.get('access-control-allow-origin')).toBe('https://app.example.com')
      expect(allowed.headers.get('access-control-allow-methods')).toContain('POST')
      expect(allowed.headers.get('access-control-allow-headers')?.toLowerCase()).toContain('authorization')

      const denied = await preflight('https://evil.example.com')
      expect(denied.headers.get('access-control-allow-origin')).toBeNull()

      const post = await h.post(batch([insert('a', { is_enabled: true })]), {
        Origin: 'https://app.example.com',
        Authorization: 'Bearer t',
      })
      expect(post.status).toBe(200)
      expect(post.headers.get('access-control-allow-origin')).toBe('https://app.example.com')
      expect(post.headers.get('access-control-expose-headers')).toBe('Retry-After')
      const foreign = await h.post(batch([insert('b', { is_enabled: true })]), {
        Origin: 'https://evil.example.com',
        Authorization: 'Bearer t',
      })
      expect(foreign.headers.get('access-control-allow-origin')).toBeNull()
    })

    it('sends no CORS headers when no origins are configured', async () => {
      const h = await startHarness()
      const res = await h.request('OPTIONS', '/sync', {
        headers: { Origin: 'https://app.example.com', 'Access-Control-Request-Method': 'POST' },
      })
      expect(res.headers.get('access-control-allow-origin')).toBeNull()
    })
  })

  describe('onCommit', () => {
    it('gets the committed changes with their revisions, and a failing listener does not fail the batch', async () => {
      const seen: Array<[number, string]> = []
      const h = await startHarness({
        onCommit: (changes) => {
          for (const c of changes) seen.push([c.revision, c.key])
        },
      })
      await h.post(batch([insert('a', { is_enabled: true }), insert('b', { is_enabled: true })]))
      await h.post(batch([remove('a')]))
      expect(seen).toEqual([
        [1, 'a'],
        [2, 'b'],
        [3, 'a'],
      ])

      const failing = await startHarness({
        onCommit: () => {
          throw new Error('listener broke')
        },
      })
      const res = await failing.post(batch([insert('a', { is_enabled: true })]))
      expect(res.status).toBe(200)
      expect(await failing.store.get('a')).toEqual(fullFlag('a'))
    })
  })
})

// PostgreSQL waits for row locks instead of failing after a busy timeout, so this one is about SQLite.
describe('on sqlite, a database locked by another process', () => {
  it('503 with Retry-After while another process holds the write lock; nothing applied; a retry succeeds', async () => {
    const h = await startOn({ dbOptions: { busyTimeoutMs: 100 } })
    const { openDatabase } = await import('@flagsync/store')
    const other = await openDatabase(h.databaseUrl)
    let release: () => void = () => {}
    const released = new Promise<void>((resolve) => {
      release = resolve
    })
    let locked: () => void = () => {}
    const isLocked = new Promise<void>((resolve) => {
      locked = resolve
    })
    const holder = other.knex.transaction(async (trx) => {
      await trx('flagsync_meta')
        .where('name', 'revision')
        .update({ value: trx.raw('value') })
      locked()
      await released
    })
    try {
      await isLocked
      const sent = batch([insert('a', { is_enabled: true })], 'while-locked')
      const res = await h.post(sent)
      expect(res.status).toBe(503)
      expect(res.body.code).toBe('unavailable')
      expect(res.headers.get('retry-after')).toBe('1')
      release()
      await holder
      const retried = await h.post(sent)
      expect(retried.body).toEqual({ batchId: 'while-locked', applied: 1, revision: 1 })
    } finally {
      release()
      await holder.catch(() => {})
      await other.close()
    }
  })
})
