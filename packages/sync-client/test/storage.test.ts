import { IDBObjectStore } from 'fake-indexeddb'
import { HttpResponse } from 'msw'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { isQuotaError, SyncClientError, toSyncClientError } from '../src/index.js'
import { harness, ModelReceiver, until, useMockServer } from './helpers.js'

const server = useMockServer()
let h = harness()
afterEach(async () => {
  await h.closeAll()
  h = harness()
})

describe('storage quota', () => {
  it('surfaces a QuotaExceededError as quota_exceeded from the call that hit it, and queues nothing', async () => {
    const client = h.client()
    await client.update('c', '1', { v: 1 })
    const add = vi.spyOn(IDBObjectStore.prototype, 'add').mockImplementation(() => {
      throw new DOMException('The quota has been exceeded.', 'QuotaExceededError')
    })
    const error = await client.insert('c', { big: 'x'.repeat(1000) }, { recordId: '2' }).catch((e: unknown) => e)
    add.mockRestore()
    expect(error).toBeInstanceOf(SyncClientError)
    expect((error as SyncClientError).code).toBe('quota_exceeded')
    expect((error as SyncClientError).message).toMatch(/quota/)
    expect((error as SyncClientError).cause).toBeDefined()
    expect((await client.outbox()).map((e) => e.operation.recordId)).toEqual(['1'])
    // Writes work again once there is room.
    await client.update('c', '3', { v: 1 })
    expect(await client.pending()).toBe(2)
  })

  it('recognizes the shapes browsers and Dexie use', () => {
    const quota = new DOMException('full', 'QuotaExceededError')
    expect(isQuotaError(quota)).toBe(true)
    expect(isQuotaError({ name: 'AbortError', inner: quota })).toBe(true)
    expect(isQuotaError({ name: 'BulkError', failures: [quota] })).toBe(true)
    expect(isQuotaError({ name: 'NS_ERROR_DOM_QUOTA_REACHED' })).toBe(true)
    expect(isQuotaError(new Error('x', { cause: quota }))).toBe(true)
    expect(isQuotaError(new DOMException('x', 'AbortError'))).toBe(false)
    expect(isQuotaError(null)).toBe(false)
    expect(toSyncClientError({ name: 'AbortError', inner: quota }).code).toBe('quota_exceeded')
    expect(toSyncClientError(new Error('boom')).code).toBe('storage_failed')
    expect(toSyncClientError({ name: 'DatabaseClosedError' }).code).toBe('closed')
    const own = new SyncClientError('closed', 'x')
    expect(toSyncClientError(own)).toBe(own)
  })
})

describe('close()', () => {
  it('aborts a request on the wire; the batch goes out again later under the same batchId', async () => {
    const r = new ModelReceiver()
    server.use(r.handler)
    r.reply(() => new Promise<Response>(() => {}))
    const a = h.client()
    await a.update('c', '1', { v: 1 })
    const flushing = a.flush().catch((e: unknown) => e)
    await until(() => r.requests.length === 1, 'the request')
    await a.close()
    expect(await flushing).toMatchObject({ code: 'closed' })

    const b = h.client()
    const [entry] = await b.outbox()
    expect(entry?.batchId).toBe(r.requests[0]?.batchId)
    // The aborted attempt did not count as a failure: no backoff to wait for.
    expect(await b.status()).toMatchObject({ state: 'idle', nextAttemptAt: null })
    expect(await b.flush()).toEqual({ delivered: 1, pending: 0 })
    expect(r.requests[1]?.batchId).toBe(r.requests[0]?.batchId)
  })

  it('does not hang on a fetch that ignores its abort signal', async () => {
    let calls = 0
    const client = h.client({
      fetch: () => {
        calls++
        return new Promise<Response>(() => {})
      },
    })
    await client.delete('c', '1')
    const flushing = client.flush().catch((e: unknown) => e)
    await until(() => calls === 1, 'the request')
    await client.close()
    expect(await flushing).toMatchObject({ code: 'closed' })
  })

  it('stops the loop: no requests after close', async () => {
    const r = new ModelReceiver()
    server.use(r.handler)
    const client = h.client({ syncIntervalMs: 1 })
    client.start()
    await client.close()
    const other = h.client()
    await other.update('c', '1', { v: 1 })
    await new Promise((resolve) => setTimeout(resolve, 30))
    expect(r.requests).toHaveLength(0)
  })
})

describe('package entry', () => {
  it('imports from Node as @flagsync/sync-client with named exports only', async () => {
    const mod = await import('@flagsync/sync-client')
    expect(typeof mod.createSyncClient).toBe('function')
    expect(typeof mod.compact).toBe('function')
    expect('default' in mod).toBe(false)
  })

  it('works with an injected fetch', async () => {
    const calls: string[] = []
    const client = h.client({
      fetch: async (input, init) => {
        calls.push(`${init?.method} ${String(input)}`)
        return HttpResponse.json({ ok: true })
      },
    })
    await client.delete('c', '1')
    expect(await client.flush()).toEqual({ delivered: 1, pending: 0 })
    expect(calls).toEqual(['POST https://receiver.test/sync'])
  })
})
