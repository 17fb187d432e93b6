import { DIALECTS, type Dialect } from '@flagsync/test-support/databases'
import { openSse, type SseReader } from '@flagsync/test-support/sse-reader'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { dbError, faultSwitch, type ReliabilityServer, sleep, startServer } from './harness.js'

/**
 * Database errors (disk full, locked, connection lost) answer 503 with Retry-After and apply nothing: the
 * fault is injected at the last moment of the write transaction (after every statement of the request ran),
 * so a half-applied write would show up in the database, the live list or the stream. Afterwards the same
 * request succeeds exactly once.
 */

const FAULTS: Array<[string, () => Error]> = [
  ['SQLite disk full (SQLITE_FULL)', dbError('SQLITE_FULL: database or disk is full', 'SQLITE_FULL')],
  ['SQLite locked (SQLITE_BUSY)', dbError('SQLITE_BUSY: database is locked', 'SQLITE_BUSY')],
  ['PostgreSQL disk full (53100)', dbError('could not extend file: No space left on device', '53100')],
  ['PostgreSQL connection failure (08006)', dbError('connection failure', '08006')],
]

interface Snapshot {
  list: string
  etag: string | null
  rows: unknown[]
  log: number
  batches: number
}

describe.each(DIALECTS)('database faults on %s', (dialect: Dialect) => {
  const fault = faultSwitch()
  let server: ReliabilityServer
  let stream: SseReader
  let counter = 0

  beforeAll(async () => {
    server = await startServer({ dialect, extras: { storeOptions: { beforeCommit: fault.beforeCommit } } })
    stream = await openSse(`${server.url}/stream`)
    await stream.waitForCount(1)
  })
  afterAll(async () => {
    stream?.close()
    await server?.dispose()
  })

  async function snapshot(): Promise<Snapshot> {
    const res = await server.request('/api/flags')
    const { rows, revision } = await server.runtime.store.loadAll('')
    const batches = await server.runtime.db.knex('flagsync_batches').count({ n: '*' }).first()
    return {
      list: await res.text(),
      etag: res.headers.get('etag'),
      rows: rows.map((r) => r.flag),
      log: revision,
      batches: Number(batches?.n ?? 0),
    }
  }

  async function expectUnavailable(res: Response): Promise<void> {
    expect(res.status).toBe(503)
    expect(res.headers.get('retry-after')).toMatch(/^\d+$/)
    expect(Number(res.headers.get('retry-after'))).toBeGreaterThanOrEqual(1)
    expect(res.headers.get('content-type')).toMatch(/^application\/json/)
    const body = await res.json()
    expect(body).toEqual({ error: expect.any(String), code: 'unavailable' })
    // The driver's message (file names, SQL) never reaches the client.
    expect(body.error).not.toMatch(/SQLITE|No space|connection failure/)
  }

  /** Two existing flags, so PATCH and DELETE have something to change. */
  async function seed(): Promise<string[]> {
    const n = ++counter
    const keys = [`seed-${n}-a`, `seed-${n}-b`]
    for (const key of keys) {
      const res = await server.request('/api/flags', {
        method: 'POST',
        body: { key, is_enabled: true, description: 'before' },
      })
      expect(res.status).toBe(200)
    }
    await stream.waitFor((e) => e.data.includes(`"${keys[1]}"`))
    return keys
  }

  type Case = { name: string; send(keys: string[]): Promise<Response>; expectOk(res: Response): Promise<void> }
  const cases: Case[] = [
    {
      name: 'POST /api/flags',
      send: (keys) =>
        server.request('/api/flags', { method: 'POST', body: { key: `${keys[0]}-new`, is_enabled: false } }),
      expectOk: async (res) => expect(res.status).toBe(200),
    },
    {
      name: 'POST /api/flags (replace)',
      send: (keys) => server.request('/api/flags', { method: 'POST', body: { key: keys[0], is_enabled: false } }),
      expectOk: async (res) => expect(res.status).toBe(200),
    },
    {
      name: 'PATCH /api/flags/:key',
      send: (keys) =>
        server.request(`/api/flags/${keys[0]}`, { method: 'PATCH', body: { description: 'after', is_enabled: false } }),
      expectOk: async (res) => expect(await res.json()).toMatchObject({ description: 'after', is_enabled: false }),
    },
    {
      name: 'DELETE /api/flags/:key',
      send: (keys) => server.request(`/api/flags/${keys[0]}`, { method: 'DELETE' }),
      expectOk: async (res) => expect(res.status).toBe(204),
    },
    {
      name: 'POST /sync (insert, update, delete in one batch)',
      send: (keys) =>
        server.request('/sync', {
          method: 'POST',
          body: {
            batchId: `batch-${keys[0]}`,
            operations: [
              { action: 'insert', collection: 'flags', recordId: `${keys[0]}-sync`, record: { is_enabled: true } },
              { action: 'update', collection: 'flags', recordId: keys[0], changes: { rollout_percentage: 5 } },
              { action: 'delete', collection: 'flags', recordId: keys[1] },
            ],
          },
        }),
      expectOk: async (res) =>
        expect(await res.json()).toEqual({
          batchId: expect.stringMatching(/^batch-/),
          applied: 3,
          revision: expect.any(Number),
        }),
    },
  ]

  for (const [faultName, makeError] of FAULTS) {
    describe(faultName, () => {
      it.each(cases)('$name: 503 + Retry-After, nothing applied or streamed; then exactly once', async (c) => {
        const keys = await seed()
        const before = await snapshot()
        const eventsBefore = stream.events.length
        const hitsBefore = fault.hits

        fault.set(makeError)
        try {
          await expectUnavailable(await c.send(keys))
          // A client retrying while the fault lasts gets the same answer and still changes nothing.
          await expectUnavailable(await c.send(keys))
        } finally {
          fault.clear()
        }
        expect(fault.hits - hitsBefore).toBe(2) // the write really reached the commit point
        expect(await snapshot()).toEqual(before)
        // Longer than the change-log poll (100 ms): a leaked commit would have been streamed by now.
        await sleep(250)
        expect(stream.events.slice(eventsBefore)).toEqual([])

        const retried = await c.send(keys)
        await c.expectOk(retried)
        const after = await snapshot()
        expect(after.log).toBeGreaterThan(before.log)
        const streamed = await stream.waitForCount(eventsBefore + (after.log - before.log))
        expect(streamed.slice(eventsBefore).map((e) => Number(e.id))).toEqual(
          Array.from({ length: after.log - before.log }, (_, i) => before.log + i + 1),
        )

        if (c.name.startsWith('POST /sync')) {
          // Exactly once: the failed attempts did not record the batch id, the successful one did.
          expect(after.batches).toBe(before.batches + 1)
          const replay = await c.send(keys)
          expect(await replay.json()).toMatchObject({ applied: 0, duplicate: true })
          expect((await snapshot()).log).toBe(after.log)
        }
      })
    })
  }

  it('a generic driver error is a 500 without details, and still applies nothing', async () => {
    const keys = await seed()
    const before = await snapshot()
    fault.set(() => new Error('SQLITE_CORRUPT: database disk image is malformed at /var/lib/secret/path'))
    try {
      const res = await server.request('/api/flags', { method: 'POST', body: { key: keys[0], is_enabled: false } })
      expect(res.status).toBe(500)
      expect(res.headers.get('retry-after')).toBeNull()
      expect(await res.json()).toEqual({ error: 'internal error', code: 'internal' })
    } finally {
      fault.clear()
    }
    expect(await snapshot()).toEqual(before)
  })
})

describe('real database failures, not injected', () => {
  it('SQLite: a database that really fills up mid-write (max_page_count) answers 503 and keeps no part of the batch', async () => {
    const server = await startServer({ dialect: 'sqlite' })
    try {
      const { knex } = server.runtime.db
      await server.request('/api/flags', { method: 'POST', body: { key: 'existing', is_enabled: true } })
      const pages = Number((await knex.raw('PRAGMA page_count'))[0]?.page_count)
      expect(pages).toBeGreaterThan(0)
      // The one pooled connection is the one the server writes through: cap the file at its current size.
      await knex.raw(`PRAGMA max_page_count = ${pages}`)
      const big = (i: number) => ({
        action: 'insert',
        collection: 'flags',
        recordId: `big-${i}`,
        record: {
          is_enabled: true,
          description: 'd'.repeat(9_000),
          rules: [{ attribute: 'a', operator: 'equals', values: Array.from({ length: 20 }, () => 'v'.repeat(1000)) }],
        },
      })
      const sent = { batchId: 'fills-the-disk', operations: Array.from({ length: 30 }, (_, i) => big(i)) }
      const before = await server.runtime.store.loadAll('')
      const res = await server.request('/sync', { method: 'POST', body: sent })
      expect(res.status).toBe(503)
      expect(res.headers.get('retry-after')).toBe('1')
      expect(await res.json()).toMatchObject({ code: 'unavailable' })
      expect(await server.runtime.store.loadAll('')).toEqual(before)
      expect(await server.runtime.store.changesSince(before.revision)).toEqual([])

      await knex.raw('PRAGMA max_page_count = 1073741823')
      const retried = await server.request('/sync', { method: 'POST', body: sent })
      expect(await retried.json()).toEqual({
        batchId: 'fills-the-disk',
        applied: 30,
        revision: (await server.runtime.store.loadAll('')).revision,
      })
      expect((await server.runtime.store.loadAll('')).rows).toHaveLength(31)
    } finally {
      await server.dispose()
    }
  })

  it('PostgreSQL: an out-of-space error raised by the server halfway through the statements rolls everything back', async () => {
    const server = await startServer({ dialect: 'postgres' })
    try {
      const { knex } = server.runtime.db
      await server.request('/api/flags', { method: 'POST', body: { key: 'existing', is_enabled: true } })
      // The flags table is written first, the change log after it: fail on the change log, like a full disk.
      await knex.raw(`
        create function flagsync_test_disk_full() returns trigger language plpgsql as $$
        begin raise exception 'could not extend file: No space left on device' using errcode = '53100'; end $$;
        create trigger flagsync_test_disk_full before insert on flagsync_changes
          for each statement execute function flagsync_test_disk_full();`)
      const before = await server.runtime.store.loadAll('')
      const post = await server.request('/api/flags', { method: 'POST', body: { key: 'new', is_enabled: true } })
      expect(post.status).toBe(503)
      expect(post.headers.get('retry-after')).toBe('1')
      const patch = await server.request('/api/flags/existing', { method: 'PATCH', body: { is_enabled: false } })
      expect(patch.status).toBe(503)
      expect(await server.runtime.store.loadAll('')).toEqual(before)
      // The API adds each flag's read-only revision to the stored flag.
      expect(await (await server.request('/api/flags')).json()).toEqual(
        before.rows.map((r) => ({ ...r.flag, revision: r.revision })),
      )

      await knex.raw('drop trigger flagsync_test_disk_full on flagsync_changes')
      expect(
        (await server.request('/api/flags', { method: 'POST', body: { key: 'new', is_enabled: true } })).status,
      ).toBe(200)

      // The receiver records the batch id with its own query inside the transaction: a failure there is the
      // database's too (503), not an internal error (500).
      await knex.raw(`create trigger flagsync_test_disk_full before insert on flagsync_batches
          for each statement execute function flagsync_test_disk_full();`)
      const sent = {
        batchId: 'batch-table-full',
        operations: [{ action: 'insert', collection: 'flags', recordId: 'via-sync', record: { is_enabled: true } }],
      }
      const sync = await server.request('/sync', { method: 'POST', body: sent })
      expect(sync.status).toBe(503)
      expect(sync.headers.get('retry-after')).toBe('1')
      expect(await server.runtime.store.get('via-sync')).toBeUndefined()
      await knex.raw('drop trigger flagsync_test_disk_full on flagsync_batches')
      expect(await (await server.request('/sync', { method: 'POST', body: sent })).json()).toEqual({
        batchId: 'batch-table-full',
        applied: 1,
        revision: expect.any(Number),
      })
    } finally {
      await server.dispose()
    }
  })

  it('PostgreSQL: a connection killed inside the transaction is a 503, and the pool recovers for the retry', async () => {
    let kill = false
    const server = await startServer({
      dialect: 'postgres',
      extras: {
        storeOptions: {
          beforeCommit: async (trx) => {
            if (kill) await trx.raw('select pg_terminate_backend(pg_backend_pid())')
          },
        },
      },
    })
    try {
      kill = true
      const res = await server.request('/api/flags', { method: 'POST', body: { key: 'k', is_enabled: true } })
      expect(res.status).toBe(503)
      expect(res.headers.get('retry-after')).toBe('1')
      kill = false
      expect((await server.runtime.store.loadAll('')).rows).toEqual([])
      const retried = await server.request('/api/flags', { method: 'POST', body: { key: 'k', is_enabled: true } })
      expect(retried.status).toBe(200)
      expect((await server.runtime.store.loadAll('')).rows.map((r) => r.key)).toEqual(['k'])
    } finally {
      await server.dispose()
    }
  })
})
