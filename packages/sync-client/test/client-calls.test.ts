import { IDBFactory, IDBKeyRange } from 'fake-indexeddb'
import { afterEach, describe, expect, it } from 'vitest'
import { createSyncClient, SyncClientError } from '../src/index.js'
import { harness, until, WEBHOOK } from './helpers.js'

let h = harness()
afterEach(async () => {
  await h.closeAll()
  h = harness()
})

async function expectCode(promise: Promise<unknown> | (() => unknown), code: string): Promise<SyncClientError> {
  let caught: unknown
  try {
    await (typeof promise === 'function' ? promise() : promise)
  } catch (error) {
    caught = error
  }
  expect(caught).toBeInstanceOf(SyncClientError)
  expect((caught as SyncClientError).code).toBe(code)
  return caught as SyncClientError
}

describe('createSyncClient options', () => {
  const base = { indexedDB: new IDBFactory(), IDBKeyRange }

  it.each([
    ['a relative URL', '/sync'],
    ['a malformed URL', 'http//nope'],
    ['an empty URL', ''],
    ['a non-http URL', 'ftp://example.com/sync'],
  ])('throws invalid_config for %s', async (_what, webhookUrl) => {
    const error = await expectCode(() => createSyncClient({ ...base, webhookUrl }), 'invalid_config')
    expect(error.message).toMatch(/webhookUrl/)
  })

  it.each([
    ['batchSize 0', { batchSize: 0 }, /batchSize/],
    ['fractional batchSize', { batchSize: 1.5 }, /batchSize/],
    ['negative syncIntervalMs', { syncIntervalMs: -1 }, /syncIntervalMs/],
    ['retry factor below 1', { retry: { factor: 0.5 } }, /retry.factor/],
    ['a non-string header', { headers: { 'x-n': 1 as unknown as string } }, /x-n/],
    ['an empty dbName', { dbName: '' }, /dbName/],
  ])('throws invalid_config for %s', async (_what, extra, message) => {
    const error = await expectCode(() => createSyncClient({ ...base, webhookUrl: WEBHOOK, ...extra }), 'invalid_config')
    expect(error.message).toMatch(message)
  })

  it('says what to pass when there is no IndexedDB (Node without a fake)', async () => {
    expect(globalThis.indexedDB).toBeUndefined()
    const error = await expectCode(() => createSyncClient({ webhookUrl: WEBHOOK }), 'invalid_config')
    expect(error.message).toMatch(/options.indexedDB/)
  })
})

describe('insert, update, delete', () => {
  it('resolves the recordId: options.recordId, else record.id, else a new UUID', async () => {
    const client = h.client()
    expect(await client.insert('todos', { title: 'a' }, { recordId: 'r1' })).toBe('r1')
    expect(await client.insert('todos', { id: 'r2', title: 'b' })).toBe('r2')
    expect(await client.insert('todos', { id: 7, title: 'c' })).toBe('7')
    const generated = await client.insert('todos', { title: 'd' })
    expect(generated).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
    const ops = (await client.outbox()).map((e) => e.operation)
    expect(ops).toEqual([
      { action: 'insert', collection: 'todos', recordId: 'r1', record: { title: 'a' } },
      { action: 'insert', collection: 'todos', recordId: 'r2', record: { id: 'r2', title: 'b' } },
      { action: 'insert', collection: 'todos', recordId: '7', record: { id: 7, title: 'c' } },
      { action: 'insert', collection: 'todos', recordId: generated, record: { title: 'd' } },
    ])
  })

  it("files a flag under its key: insert('flags', flag) needs no recordId, and a key that disagrees is refused", async () => {
    const client = h.client()
    expect(await client.insert('flags', { key: 'new-checkout', is_enabled: true })).toBe('new-checkout')
    expect(await client.insert('flags', { key: 'x', is_enabled: true }, { recordId: 'x' })).toBe('x')
    // Other collections do not read `key`.
    const todo = await client.insert('todos', { key: 'k', title: 'a' })
    expect(todo).not.toBe('k')
    expect((await client.outbox()).map((e) => e.operation.recordId)).toEqual(['new-checkout', 'x', todo])
    const mismatch = await expectCode(
      () => client.insert('flags', { key: 'a', is_enabled: true }, { recordId: 'b' }),
      'invalid_operation',
    )
    expect(mismatch.message).toMatch(/record\.key \("a"\) differs from options\.recordId \("b"\)/)
    await expectCode(() => client.insert('flags', { key: { x: 1 } }), 'invalid_operation')
  })

  it('uses the injected id generator', async () => {
    let n = 0
    const client = h.client({ generateId: () => `id-${++n}` })
    expect(await client.insert('todos', { title: 'x' })).toMatch(/^id-\d+$/)
  })

  it('stores a JSON copy: later mutation by the app does not change the queued operation', async () => {
    const client = h.client()
    const record = { title: 'a', tags: ['x'], when: new Date(0), skip: undefined }
    await client.insert('todos', record, { recordId: 'r' })
    record.title = 'changed'
    record.tags.push('y')
    const [entry] = await client.outbox()
    expect(entry?.operation).toEqual({
      action: 'insert',
      collection: 'todos',
      recordId: 'r',
      record: { title: 'a', tags: ['x'], when: '1970-01-01T00:00:00.000Z' },
    })
  })

  it('lists the outbox with local ids, unbatched', async () => {
    const client = h.client()
    await client.update('flags', 'a', { is_enabled: true })
    await client.delete('flags', 'b')
    const entries = await client.outbox()
    expect(entries.map((e) => [e.batchId, e.operation.action])).toEqual([
      [null, 'update'],
      [null, 'delete'],
    ])
    expect(entries[1]?.operation).toEqual({ action: 'delete', collection: 'flags', recordId: 'b' })
    expect((entries[0]?.id ?? 0) < (entries[1]?.id ?? 0)).toBe(true)
    expect(await client.pending()).toBe(2)
  })
})

describe('invalid calls throw invalid_operation and queue nothing', () => {
  it.each([
    ['unknown action', { action: 'upsert', collection: 'c', recordId: '1', record: {} }],
    ['missing action', { collection: 'c', recordId: '1' }],
    ['empty collection', { action: 'delete', collection: '', recordId: '1' }],
    ['too long recordId', { action: 'delete', collection: 'c', recordId: 'x'.repeat(257) }],
    ['array changes', { action: 'update', collection: 'c', recordId: '1', changes: [1] }],
    ['null changes', { action: 'update', collection: 'c', recordId: '1', changes: null }],
    ['string record', { action: 'insert', collection: 'c', recordId: '1', record: 'x' }],
    ['class instance record', { action: 'insert', collection: 'c', recordId: '1', record: new Map() }],
  ])('enqueue with %s', async (_what, operation) => {
    const client = h.client()
    await expectCode(client.enqueue(operation as never), 'invalid_operation')
    expect(await client.outbox()).toEqual([])
  })

  it.each([
    ['non-object changes', (c: ReturnType<typeof h.client>) => c.update('c', '1', 'x' as never)],
    ['array changes', (c: ReturnType<typeof h.client>) => c.update('c', '1', [] as never)],
    ['non-JSON changes', (c: ReturnType<typeof h.client>) => c.update('c', '1', { n: 10n })],
    [
      'circular record',
      (c: ReturnType<typeof h.client>) => {
        const record: Record<string, unknown> = {}
        record.self = record
        return c.insert('c', record)
      },
    ],
    [
      'record.id differing from options.recordId',
      (c: ReturnType<typeof h.client>) => c.insert('c', { id: 'a' }, { recordId: 'b' }),
    ],
    ['an object record.id', (c: ReturnType<typeof h.client>) => c.insert('c', { id: { x: 1 } })],
    ['a non-string recordId', (c: ReturnType<typeof h.client>) => c.delete('c', 5 as never)],
  ])('%s', async (_what, call) => {
    const client = h.client()
    await expectCode(call(client), 'invalid_operation')
    expect(await client.outbox()).toEqual([])
  })

  it('update or delete after a queued delete of the same record', async () => {
    const client = h.client()
    await client.insert('c', { v: 1 }, { recordId: '1' })
    await client.delete('c', '1')
    const error = await expectCode(client.update('c', '1', { v: 2 }), 'invalid_operation')
    expect(error.message).toMatch(/delete of this record is already queued/)
    await expectCode(client.delete('c', '1'), 'invalid_operation')
    expect((await client.outbox()).map((e) => e.operation.action)).toEqual(['insert', 'delete'])
    // Another record, or a re-insert, is fine.
    await client.update('c', '2', { v: 1 })
    await client.insert('c', { v: 3 }, { recordId: '1' })
    await client.update('c', '1', { v: 4 })
    expect((await client.outbox()).length).toBe(5)
  })

  it('a delete in a batch on the wire still blocks updates until it is acknowledged', async () => {
    let answer: ((r: Response) => void) | undefined
    const client = h.client({
      fetch: () =>
        new Promise<Response>((resolve) => {
          answer = resolve
        }),
    })
    await client.delete('c', '1')
    const flushing = client.flush()
    await until(() => answer !== undefined, 'the request')
    expect((await client.outbox())[0]?.batchId).toBeTruthy()
    await expectCode(client.update('c', '1', { v: 1 }), 'invalid_operation')
    answer?.(new Response('{}', { status: 200 }))
    await flushing
    await client.update('c', '1', { v: 1 }) // the record is gone remotely; the receiver decides
    expect(await client.pending()).toBe(1)
  })

  it('another instance on the same database sees the queued delete', async () => {
    const a = h.client()
    const b = h.client()
    await a.delete('c', '1')
    await expectCode(b.update('c', '1', { v: 1 }), 'invalid_operation')
  })

  it('discarding operations recomputes whether a delete is queued', async () => {
    const client = h.client()
    await client.delete('c', '1')
    await client.insert('c', { v: 1 }, { recordId: '1' })
    const [del, ins] = await client.outbox()
    await client.discard([ins?.id ?? -1]) // the delete is the last queued operation again
    await expectCode(client.update('c', '1', { v: 2 }), 'invalid_operation')
    await client.discard([del?.id ?? -1])
    await client.update('c', '1', { v: 2 })
    expect((await client.outbox()).map((e) => e.operation.action)).toEqual(['update'])
  })

  it('rejects a collection name containing U+0000', async () => {
    const client = h.client()
    await expectCode(client.delete('a\u0000b', '1'), 'invalid_operation')
  })

  it('calls after close throw closed', async () => {
    const client = h.client()
    await client.close()
    await expectCode(() => client.insert('c', {}), 'closed')
    await expectCode(() => client.flush(), 'closed')
    expect(() => client.start()).toThrow(SyncClientError)
    await client.close() // idempotent
  })
})
