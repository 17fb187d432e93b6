import { afterEach, describe, expect, it } from 'vitest'
import { SyncClientError, type SyncStatus } from '../src/index.js'
import { harness, ManualClock, ModelReceiver, networkError, settle, status, until, useMockServer } from './helpers.js'

const server = useMockServer()
let h = harness()
afterEach(async () => {
  await h.closeAll()
  h = harness()
})

const poisonBody = (index: number) => ({
  error: `operation ${index}: flag "b" does not exist`,
  code: 'validation_failed',
  operationIndex: index,
  issues: [{ path: 'recordId', message: 'no flag with this key; insert it first' }],
})

describe('a rejected batch (non-transient 4xx) blocks the queue', () => {
  it('reports blocked with the receiver error and operationIndex, and keeps retrying with backoff', async () => {
    const clock = new ManualClock(0)
    const r = new ModelReceiver({ now: clock.now })
    server.use(r.handler)
    r.reply(status(422, poisonBody(1)), status(422, poisonBody(1)))
    const client = h.client({ clock, random: () => 0 })
    await client.update('flags', 'a', { is_enabled: true })
    await client.update('flags', 'b', { is_enabled: true })
    await client.flush()

    const s = await client.status()
    expect(s.state).toBe('blocked')
    expect(s.pending).toBe(2)
    expect(s.nextAttemptAt).toBe(1000)
    expect(s.lastError).toMatchObject({
      kind: 'rejected',
      status: 422,
      code: 'validation_failed',
      message: 'operation 1: flag "b" does not exist',
      operationIndex: 1,
      batchId: r.requests[0]?.batchId,
      body: poisonBody(1),
    })

    // The spec: the client holds its queue and retries later, same batch.
    client.start()
    await clock.advance(1000)
    expect(r.requests.map((q) => q.at)).toEqual([0, 1000])
    expect(r.requests[1]?.batchId).toBe(r.requests[0]?.batchId)
    expect((await client.status()).state).toBe('blocked')
    // The receiver was fixed meanwhile: the next retry goes through and unblocks.
    await clock.advance(2000)
    expect(r.requests).toHaveLength(3)
    expect(await client.status()).toMatchObject({ state: 'idle', pending: 0, lastError: null })
  })

  it.each([400, 401, 403, 404, 409, 413, 422])('%i blocks', async (code) => {
    const r = new ModelReceiver()
    server.use(r.handler)
    r.reply(status(code))
    const client = h.client()
    await client.delete('c', '1')
    await client.flush()
    expect((await client.status()).state).toBe('blocked')
    expect((await client.status()).lastError?.status).toBe(code)
  })

  it.each([408, 429, 500, 502, 503, 504])('%i does not block', async (code) => {
    const r = new ModelReceiver()
    server.use(r.handler)
    r.reply(status(code))
    const client = h.client()
    await client.delete('c', '1')
    await client.flush()
    expect((await client.status()).state).toBe('backoff')
  })

  it('lists the outbox with the blocked batch first and discards the poison operation', async () => {
    const r = new ModelReceiver({ strictUpdates: true })
    server.use(r.handler)
    const client = h.client()
    await client.insert('flags', { key: 'a', is_enabled: false }, { recordId: 'a' })
    await client.update('flags', 'b', { is_enabled: true }) // b does not exist: the receiver says 422
    await client.update('flags', 'b', { description: 'x' })
    await client.flush()
    expect((await client.status()).state).toBe('blocked')
    const firstBatch = r.requests[0]?.batchId
    expect(r.requests[0]?.operations).toHaveLength(2) // the two updates of b were compacted
    expect((await client.status()).lastError?.operationIndex).toBe(1)

    await client.update('flags', 'a', { is_enabled: true }) // queued behind the blocked batch
    const outbox = await client.outbox()
    expect(outbox.map((e) => [e.batchId, e.operation.action, e.operation.recordId])).toEqual([
      [firstBatch, 'insert', 'a'],
      [firstBatch, 'update', 'b'],
      [firstBatch, 'update', 'b'],
      [null, 'update', 'a'],
    ])
    const poison = outbox.filter((e) => e.operation.recordId === 'b').map((e) => e.id)
    expect(await client.discard(poison)).toBe(2)

    // Re-cut under a new batchId (the receiver never applied the rejected one), merged with later writes.
    const after = await client.outbox()
    expect(after.map((e) => [e.batchId, e.operation.recordId])).toEqual([
      [null, 'a'],
      [null, 'a'],
    ])
    expect((await client.status()).state).toBe('idle')
    await client.flush()
    expect(r.requests).toHaveLength(2)
    expect(r.requests[1]?.batchId).not.toBe(firstBatch)
    expect(r.requests[1]?.operations).toEqual([
      { action: 'insert', collection: 'flags', recordId: 'a', record: { key: 'a', is_enabled: true } },
    ])
    expect(r.records.get('flags/a')).toEqual({ key: 'a', is_enabled: true })
    expect(await client.status()).toMatchObject({ state: 'idle', pending: 0, lastError: null })
  })

  it('refuses to discard from a batch that was sent and may have been applied', async () => {
    const r = new ModelReceiver()
    server.use(r.handler)
    r.reply(networkError)
    const client = h.client()
    await client.update('c', '1', { v: 1 })
    await client.update('c', '2', { v: 1 })
    await client.flush()
    const [entry] = await client.outbox()
    const error = await client.discard([entry?.id ?? -1]).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(SyncClientError)
    expect((error as SyncClientError).code).toBe('invalid_operation')
    expect(await client.outbox()).toHaveLength(2)
  })

  it('waits while another tab has the batch on the wire, then discards from the rejected batch', async () => {
    const r = new ModelReceiver()
    server.use(r.handler)
    let reject: (() => void) | undefined
    r.reply(
      () =>
        new Promise<Response>((resolve) => {
          reject = () => resolve(Response.json(poisonBody(0), { status: 422 }))
        }),
    )
    const a = h.client()
    const b = h.client()
    await a.update('flags', 'b', { is_enabled: true })
    const aFlush = a.flush()
    await until(() => reject !== undefined, 'a sends')
    const [entry] = await b.outbox()
    let discarded: number | undefined
    const bDiscard = b.discard([entry?.id ?? -1]).then((n) => {
      discarded = n
    })
    await new Promise((resolve) => setTimeout(resolve, 250))
    expect(discarded).toBeUndefined() // the answer decides: a success would have applied the operation
    reject?.()
    await aFlush
    await bDiscard
    expect(discarded).toBe(1)
    expect(await b.outbox()).toEqual([])
  })

  it('discards unbatched operations and ignores unknown ids', async () => {
    const r = new ModelReceiver()
    server.use(r.handler)
    const client = h.client()
    await client.update('c', '1', { v: 1 })
    await client.update('c', '2', { v: 1 })
    const [first] = await client.outbox()
    expect(await client.discard([first?.id ?? -1, 999])).toBe(1)
    await client.flush()
    expect(r.sentOperations().map((op) => op.recordId)).toEqual(['2'])
    await expect(client.discard(['x' as unknown as number])).rejects.toThrow(/array of outbox ids/)
  })
})

describe('dead-letter option', () => {
  it('moves only the operation the receiver named and sends the rest under a new batchId', async () => {
    const r = new ModelReceiver()
    server.use(r.handler)
    r.reply(status(422, poisonBody(1)))
    const client = h.client({ deadLetter: true })
    await client.update('flags', 'a', { is_enabled: true })
    await client.update('flags', 'b', { is_enabled: true })
    await client.update('flags', 'c', { is_enabled: true })
    const result = await client.flush()
    expect(result).toEqual({ delivered: 2, pending: 0 })
    expect(r.requests).toHaveLength(2)
    expect(r.requests[1]?.batchId).not.toBe(r.requests[0]?.batchId)
    expect(r.requests[1]?.operations.map((op) => op.recordId)).toEqual(['a', 'c'])

    const dead = await client.deadLetters()
    expect(dead).toHaveLength(1)
    expect(dead[0]).toMatchObject({
      batchId: r.requests[0]?.batchId,
      operation: { action: 'update', collection: 'flags', recordId: 'b', changes: { is_enabled: true } },
      error: { status: 422, operationIndex: 1, code: 'validation_failed' },
    })
    const s = await client.status()
    expect(s.state).toBe('idle')
    expect(s.lastError).toBeNull() // the later success cleared it

    await client.clearDeadLetters([dead[0]?.id ?? -1])
    expect(await client.deadLetters()).toEqual([])
  })

  it('moves the whole batch when the receiver names no operation, and the status keeps the error', async () => {
    const r = new ModelReceiver()
    server.use(r.handler)
    r.reply(status(400, { error: 'bad batch' }))
    const client = h.client({ deadLetter: true })
    await client.update('c', '1', { v: 1 })
    await client.delete('c', '2')
    expect(await client.flush()).toEqual({ delivered: 0, pending: 0 })
    expect((await client.deadLetters()).map((d) => d.operation.recordId)).toEqual(['1', '2'])
    expect(await client.status()).toMatchObject({
      state: 'idle',
      pending: 0,
      lastError: { kind: 'rejected', status: 400, message: 'bad batch' },
    })
    await client.clearDeadLetters()
    expect(await client.deadLetters()).toEqual([])
  })

  it.each([401, 403, 404, 405, 413, 415])(
    'a %i says nothing about the operations: it blocks, files nothing away, and the same operations go out once fixed',
    async (code) => {
      const r = new ModelReceiver()
      server.use(r.handler)
      r.reply(status(code, { error: 'not about the operations', code: 'x' }))
      const client = h.client({ deadLetter: true })
      await client.update('c', '1', { v: 1 })
      await client.delete('c', '2')
      expect(await client.flush()).toEqual({ delivered: 0, pending: 2 })
      expect(await client.deadLetters()).toEqual([])
      expect(await client.status()).toMatchObject({ state: 'blocked', lastError: { kind: 'rejected', status: code } })
      expect(await client.flush()).toEqual({ delivered: 2, pending: 0 })
      expect(r.requests.map((q) => q.operations.map((op) => op.recordId))).toEqual([
        ['1', '2'],
        ['1', '2'],
      ])
      expect(await client.deadLetters()).toEqual([])
    },
  )

  it.each([false, true])(
    'a 413 blocks; a client of the same outbox with a smaller batchSize re-cuts the batch and delivers it (deadLetter %s)',
    async (deadLetter) => {
      const r = new ModelReceiver()
      server.use(r.handler)
      r.reply(status(413, { error: 'at most 2 operations', code: 'payload_too_large', maxOperations: 2 }))
      const big = h.client({ batchSize: 5, deadLetter })
      for (let i = 0; i < 5; i++) await big.update('c', String(i), { v: i })
      expect(await big.flush()).toEqual({ delivered: 0, pending: 5 })
      expect(await big.status()).toMatchObject({ state: 'blocked', lastError: { status: 413 } })
      // The same size again is refused again: it stays blocked, one batch, the same id.
      r.reply(status(413, { error: 'at most 2 operations', code: 'payload_too_large', maxOperations: 2 }))
      expect(await big.flush()).toEqual({ delivered: 0, pending: 5 })
      expect(new Set(r.requests.map((q) => q.batchId)).size).toBe(1)
      await big.close()

      // The receiver refuses the stored 5-operation batch once more; this client cuts 2 at most, so it re-cuts.
      r.reply(status(413, { error: 'at most 2 operations', code: 'payload_too_large', maxOperations: 2 }))
      const small = h.client({ batchSize: 2, deadLetter })
      expect(await small.flush()).toEqual({ delivered: 5, pending: 0 })
      expect(r.requests[2]?.batchId).toBe(r.requests[0]?.batchId)
      const resent = r.requests.slice(3)
      expect(resent.map((q) => q.operations.map((op) => op.recordId))).toEqual([['0', '1'], ['2', '3'], ['4']])
      expect(resent.map((q) => q.batchId)).not.toContain(r.requests[0]?.batchId)
      expect(await small.deadLetters()).toEqual([])
      expect(await small.status()).toMatchObject({ state: 'idle', lastError: null })
    },
  )

  it('does not dead-letter transient failures', async () => {
    const r = new ModelReceiver()
    server.use(r.handler)
    r.reply(status(429), status(503))
    const client = h.client({ deadLetter: true })
    await client.update('c', '1', { v: 1 })
    await client.flush()
    await client.flush()
    expect(await client.deadLetters()).toEqual([])
    expect(await client.flush()).toEqual({ delivered: 1, pending: 0 })
  })
})

describe('status notifications', () => {
  it('calls listeners after subscribe and on every outbox change, with the pending count', async () => {
    const r = new ModelReceiver()
    server.use(r.handler)
    r.reply(status(422, poisonBody(0)))
    const client = h.client()
    const seen: SyncStatus[] = []
    const off = client.subscribe((s) => seen.push(s))
    expect(seen).toEqual([]) // never during subscribe itself
    await settle()
    expect(seen.at(-1)).toEqual({ state: 'idle', pending: 0, lastError: null, nextAttemptAt: null, conflicts: 0 })

    // Reads are paced by their own cost (a change right after a read waits that long), so wait for the announcement.
    await client.update('c', '1', { v: 1 })
    await until(() => seen.at(-1)?.pending === 1, 'pending 1')
    const before = seen.length
    await client.update('c', '1', { v: 2 }) // merges: same count, but still a change
    await until(() => seen.length > before, 'a change with the same count is announced')
    await client.update('c', '2', { v: 1 })
    await until(() => seen.at(-1)?.pending === 2, 'pending 2')

    await client.flush()
    await until(() => seen.at(-1)?.state === 'blocked', 'blocked')
    expect(seen.some((s) => s.state === 'syncing')).toBe(true)
    expect(seen.at(-1)).toMatchObject({ state: 'blocked', pending: 2 })

    const ids = (await client.outbox()).filter((e) => e.operation.recordId === '1').map((e) => e.id)
    await client.discard(ids)
    await until(() => seen.at(-1)?.state === 'idle', 'idle again')
    expect(seen.at(-1)).toMatchObject({ state: 'idle', pending: 1 })

    await client.flush()
    await until(() => seen.at(-1)?.pending === 0, 'pending 0')
    expect(seen.at(-1)).toEqual({ state: 'idle', pending: 0, lastError: null, nextAttemptAt: null, conflicts: 0 })

    off()
    const count = seen.length
    await client.update('c', '3', { v: 1 })
    await settle()
    await new Promise((resolve) => setTimeout(resolve, 50))
    expect(seen).toHaveLength(count)
  })

  it('a throwing listener does not stop the others', async () => {
    const client = h.client()
    const seen: number[] = []
    const errors: unknown[] = []
    const onError = (e: unknown) => errors.push(e)
    process.on('uncaughtException', onError)
    try {
      client.subscribe(() => {
        throw new Error('listener bug')
      })
      client.subscribe((s) => seen.push(s.pending))
      await client.delete('c', '1')
      await until(() => seen.at(-1) === 1, 'the second listener hears the delete')
    } finally {
      process.off('uncaughtException', onError)
    }
    expect(seen.at(-1)).toBe(1)
    expect(errors.length).toBeGreaterThan(0)
  })
})
