import { DIALECTS } from '@flagsync/test-support/databases'
import { openSse, type SseReader } from '@flagsync/test-support/sse-reader'
import fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  anyValue,
  expectSafe,
  expectStreamMatchesStore,
  FUZZ_TIMEOUT_MS,
  type FuzzRequest,
  flagLike,
  hostileJsonText,
  nastyString,
  oversized,
  runs,
  validFlag,
  validKey,
  wrongContentType,
} from './fuzz-support.js'
import { type ReliabilityServer, startServer } from './harness.js'

/**
 * Hostile sync batches at POST /sync (the receiver mounted on the flat API): never a 5xx; a rejected batch
 * changes neither the flags nor the recorded batch ids (so the same id can succeed later); a replayed id
 * changes nothing; the stream carries exactly the accepted changes.
 */

const json = (value: unknown) => JSON.stringify(value) as string | undefined

/** A small pool of ids, so replays (duplicates) happen; plus hostile ids. */
const batchId = fc.oneof(
  fc.constantFrom('b1', 'b2', 'b3', 'b4', 'b5'),
  fc.uuid(),
  nastyString,
  fc.string({ unit: 'binary', minLength: 120, maxLength: 140 }),
  anyValue,
)

const { key: _key, ...patchFields } = {
  key: null,
  is_enabled: fc.boolean(),
  description: fc.oneof(nastyString, fc.constant(null)),
  rollout_percentage: fc.oneof(fc.integer({ min: -1, max: 101 }), fc.constant(null)),
}

const operation = fc.oneof(
  // Well-formed operations on the flags collection (valid or invalid data).
  fc.record({
    action: fc.constant('insert'),
    collection: fc.constant('flags'),
    recordId: fc.oneof(validKey, validKey, nastyString),
    record: fc.oneof(
      validFlag.map(({ key: _k, ...rest }) => rest),
      flagLike,
    ),
  }),
  fc.record({
    action: fc.constant('update'),
    collection: fc.constant('flags'),
    recordId: fc.oneof(validKey, validKey, nastyString),
    changes: fc.oneof(fc.record(patchFields, { requiredKeys: [] }), flagLike),
  }),
  fc.record({
    action: fc.constant('delete'),
    collection: fc.constant('flags'),
    recordId: fc.oneof(validKey, nastyString),
  }),
  // Anything at all in each field.
  fc.record(
    {
      action: fc.oneof(fc.constantFrom('insert', 'update', 'delete', 'upsert'), anyValue),
      collection: fc.oneof(fc.constantFrom('flags', 'users'), nastyString, anyValue),
      recordId: fc.oneof(validKey, nastyString, anyValue),
      record: fc.oneof(flagLike, anyValue),
      changes: fc.oneof(flagLike, anyValue),
    },
    { requiredKeys: [] },
  ),
  anyValue,
)

const syncRequest: fc.Arbitrary<FuzzRequest> = fc.oneof(
  fc
    .record(
      {
        batchId,
        operations: fc.oneof(fc.array(operation, { maxLength: 6 }), fc.array(operation, { maxLength: 6 }), anyValue),
        extra: anyValue,
      },
      { requiredKeys: [] },
    )
    .map((batch) => ({ method: 'POST', path: '/sync', contentType: 'application/json', body: json(batch) })),
  // Valid batches (the happy path with hostile text), so the stream check has accepted changes to see.
  fc
    .tuple(
      batchId,
      fc.array(
        validFlag.map(({ key, ...record }) => ({ action: 'insert', collection: 'flags', recordId: key, record })),
        { minLength: 1, maxLength: 4 },
      ),
    )
    .map(([id, operations]) => ({
      method: 'POST',
      path: '/sync',
      contentType: 'application/json',
      body: json({ batchId: id, operations }),
    })),
  hostileJsonText.map((body) => ({ method: 'POST', path: '/sync', contentType: 'application/json', body })),
  fc
    .tuple(fc.option(wrongContentType), fc.option(fc.constant('{"batchId":"ct","operations":[]}')))
    .map(([contentType, body]) => ({
      method: 'POST',
      path: '/sync',
      contentType: contentType ?? undefined,
      body: body ?? undefined,
    })),
  fc
    .uint8Array({ maxLength: 200 })
    .map((bytes) => ({ method: 'POST', path: '/sync', contentType: 'application/json', body: Buffer.from(bytes) })),
  fc.constantFrom('GET', 'PUT', 'DELETE', 'PATCH').map((method) => ({ method, path: '/sync' })),
)

describe.each(DIALECTS)('hostile sync batches at /sync on %s', (dialect) => {
  let server: ReliabilityServer
  let stream: SseReader

  beforeAll(async () => {
    server = await startServer({ dialect })
    stream = await openSse(`${server.url}/stream`)
    await stream.waitForCount(1)
  })
  afterAll(async () => {
    stream?.close()
    await server?.dispose()
  })

  const batchIds = async () =>
    (await server.runtime.db.knex('flagsync_batches').select('batch_id').orderBy('batch_id')).map(
      (r: { batch_id: string }) => r.batch_id,
    )

  it(
    'random batches: never a 5xx; a rejected batch records nothing; a replayed id changes nothing',
    async () => {
      let accepted = 0
      let lastAccepted: Parameters<typeof expectSafe>[1] | undefined
      await fc.assert(
        fc.asyncProperty(syncRequest, async (req) => {
          const idsBefore = await batchIds()
          const res = await expectSafe(server, req)
          const idsAfter = await batchIds()
          if (res.status >= 400) {
            expect(idsAfter).toEqual(idsBefore)
            return
          }
          expect(res.status).toBe(200)
          const ack = JSON.parse(res.body) as { batchId: string; applied: number; duplicate?: boolean }
          const sent = JSON.parse(String(req.body)) as { batchId: string; operations: unknown[] }
          expect(ack.batchId).toBe(sent.batchId)
          if (ack.duplicate) {
            expect(ack.applied).toBe(0)
            expect(idsAfter).toEqual(idsBefore)
          } else {
            accepted++
            lastAccepted = req
            expect(ack.applied).toBe(sent.operations.length)
            expect(idsAfter.length).toBe(idsBefore.length + 1)
          }
        }),
        runs(200),
      )
      expect(accepted).toBeGreaterThan(5)
      // Whatever the generator produced, one replay is certain: the last accepted batch, sent again.
      const idsBefore = await batchIds()
      const replay = await expectSafe(server, lastAccepted as NonNullable<typeof lastAccepted>)
      expect(JSON.parse(replay.body)).toMatchObject({ applied: 0, duplicate: true })
      expect(await batchIds()).toEqual(idsBefore)
    },
    FUZZ_TIMEOUT_MS,
  )

  it('bodies over 5 MB and batches over 1000 operations are 413 and record nothing', async () => {
    await fc.assert(
      fc.asyncProperty(oversized(5 * 1024 * 1024), async (body) => {
        const res = await expectSafe(server, { method: 'POST', path: '/sync', contentType: 'application/json', body })
        expect(res.status).toBe(413)
      }),
      runs(3),
    )
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1001, max: 1500 }), fc.uuid(), async (n, id) => {
        const operations = Array.from({ length: n }, (_, i) => ({
          action: 'insert',
          collection: 'flags',
          recordId: `many-${i}`,
          record: { is_enabled: true },
        }))
        const body = json({ batchId: id, operations })
        const res = await expectSafe(server, { method: 'POST', path: '/sync', contentType: 'application/json', body })
        expect(res.status).toBe(413)
        expect(JSON.parse(res.body)).toMatchObject({ code: 'payload_too_large', maxOperations: 1000 })
        expect(await batchIds()).not.toContain(id)
      }),
      runs(3),
    )
  })

  it('the stream carried exactly the accepted changes, each event intact', async () => {
    await expectStreamMatchesStore(server, stream)
    expect(stream.events.length).toBeGreaterThan(5)
  })
})
