import { HttpError, toHttpError } from '@flagsync/server-kit'
import { FlagStore, isDatabaseFailure, openDatabase, StoreError, toStoreError } from '@flagsync/store'
import { createTestDatabase, DIALECTS, type TestDatabase } from '@flagsync/test-support/databases'
import { afterEach, describe, expect, it } from 'vitest'
import { type ReliabilityServer, startServer } from './harness.js'

/** The 5xx answers the reliability work found, each pinned down so it cannot come back. */

const servers: ReliabilityServer[] = []
const databases: TestDatabase[] = []
afterEach(async () => {
  for (const s of servers.splice(0)) await s.dispose()
  for (const d of databases.splice(0)) await d.drop()
})

describe.each(DIALECTS)('hostile paths and ids on %s', (dialect) => {
  it('a malformed %-escape in the path is a 400, not a 500', async () => {
    const server = await startServer({ dialect })
    servers.push(server)
    for (const method of ['GET', 'PATCH', 'DELETE']) {
      const res = await server.request('/api/flags/%E0%A4%A', { method, body: method === 'PATCH' ? {} : undefined })
      expect(res.status, method).toBe(400)
      expect(await res.json()).toEqual({ error: 'malformed request', code: 'bad_request' })
    }
  })

  it('PATCH and DELETE of a key no flag can have (NUL, too long) skip the database: 404 and 204', async () => {
    const server = await startServer({ dialect })
    servers.push(server)
    await server.request('/api/flags', { method: 'POST', body: { key: 'kept', is_enabled: true } })
    for (const key of ['%00', `a%00b`, 'x'.repeat(101), '%F0%9F%98%80']) {
      expect((await server.request(`/api/flags/${key}`, { method: 'PATCH', body: { is_enabled: false } })).status).toBe(
        404,
      )
      expect((await server.request(`/api/flags/${key}`, { method: 'DELETE' })).status).toBe(204)
    }
    expect((await server.runtime.store.loadAll('')).rows.map((r) => r.key)).toEqual(['kept'])
  })

  it('a NUL in a batch id or record id is never a 500 (PostgreSQL text cannot hold NUL: 422)', async () => {
    const server = await startServer({ dialect })
    servers.push(server)
    const batches = [
      { batchId: 'nul\u0000id', operations: [] },
      { batchId: 'ok-1', operations: [{ action: 'delete', collection: 'flags', recordId: 'a\u0000' }] },
      { batchId: 'ok-2', operations: [{ action: 'update', collection: 'flags', recordId: 'a\u0000', changes: {} }] },
    ]
    for (const batch of batches) {
      const res = await server.request('/sync', { method: 'POST', body: batch })
      expect(res.status, JSON.stringify(batch)).toBeLessThan(500)
      if (dialect === 'postgres') expect(res.status).toBeGreaterThanOrEqual(400)
    }
  })
})

describe('error normalisation', () => {
  it('toHttpError: a 4xx error without `expose` is a client error with a generic message', () => {
    const uri = Object.assign(new URIError("Failed to decode param '%E0%A4%A'"), { status: 400 })
    expect(toHttpError(uri)).toMatchObject({ status: 400, code: 'bad_request', message: 'malformed request' })
    // The generic message agrees with the status.
    const missing = Object.assign(new Error('ENOENT: /srv/www/index.html'), { status: 404 })
    expect(toHttpError(missing)).toMatchObject({ status: 404, code: 'not_found', message: 'not found' })
    const exposed = Object.assign(new Error('range not satisfiable'), { status: 416, expose: true })
    // A status the table has keeps its code: a static file's 416 stays a 416 (`range_not_satisfiable`).
    expect(toHttpError(exposed)).toMatchObject({
      status: 416,
      code: 'range_not_satisfiable',
      message: 'range not satisfiable',
    })
    expect(toHttpError(Object.assign(new Error('x'), { status: 503 })).status).toBe(500)
  })

  it('toStoreError: lost connections are retryable, PostgreSQL data exceptions are the request’s fault', () => {
    expect(toStoreError(new Error('Connection terminated unexpectedly')).code).toBe('unavailable')
    expect(toStoreError(Object.assign(new Error('terminating connection'), { code: '57P01' })).code).toBe('unavailable')
    const nul = Object.assign(new Error('invalid byte sequence for encoding "UTF8": 0x00'), {
      code: '22021',
      severity: 'ERROR',
    })
    const error = toStoreError(nul)
    expect(error.code).toBe('validation_failed')
    expect(toHttpError(error).status).toBe(422)
    expect(toStoreError(Object.assign(new Error('x'), { code: '22021' })).code).toBe('internal') // not from pg
  })

  it('isDatabaseFailure tells driver errors from application errors', () => {
    expect(isDatabaseFailure(Object.assign(new Error('busy'), { code: 'SQLITE_BUSY' }))).toBe(true)
    expect(isDatabaseFailure(Object.assign(new Error('x'), { code: '40001', severity: 'ERROR' }))).toBe(true)
    expect(isDatabaseFailure(Object.assign(new Error('x'), { code: 'ECONNRESET' }))).toBe(true)
    expect(isDatabaseFailure(new StoreError('unavailable', 'x'))).toBe(true)
    expect(isDatabaseFailure(new HttpError('not_found', 'x'))).toBe(false)
    expect(isDatabaseFailure(new Error('invalid operation'))).toBe(false)
    expect(isDatabaseFailure('string')).toBe(false)
  })

  it('a database failure of a query the write callback runs itself becomes a StoreError (503, not 500)', async () => {
    const db = await createTestDatabase('sqlite')
    databases.push(db)
    const opened = await openDatabase(db.url)
    try {
      const store = new FlagStore(opened)
      const busy = Object.assign(new Error('SQLITE_BUSY: database is locked'), { code: 'SQLITE_BUSY' })
      const failure = await store
        .write(async (w) => {
          w.put({ key: 'a', is_enabled: true })
          throw busy // what a failing `trx(...)` query inside the callback throws
        })
        .catch((e: unknown) => e)
      expect(failure).toBeInstanceOf(StoreError)
      expect((failure as StoreError).code).toBe('unavailable')
      expect((failure as StoreError).cause).toBe(busy)
      // Application errors still pass through untouched.
      const mine = new HttpError('not_found', 'no such flag')
      expect(await store.write(async () => Promise.reject(mine)).catch((e: unknown) => e)).toBe(mine)
      expect((await store.loadAll()).rows).toEqual([])
    } finally {
      await opened.close()
    }
  })
})
