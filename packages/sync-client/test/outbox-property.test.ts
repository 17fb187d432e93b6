import type { Operation } from '@flagsync/protocol'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { compact, SyncClientError } from '../src/index.js'
import { harness, ModelReceiver, modelState, status, useMockServer } from './helpers.js'

const server = useMockServer()

const RECORDS = ['a', 'b', 'c', 'd', 'e', 'f']
const payload = fc.dictionary(fc.constantFrom('p', 'q', 'r'), fc.integer({ min: 0, max: 9 }), { maxKeys: 2 })
const write = fc.record({
  kind: fc.constant('write' as const),
  rec: fc.nat({ max: RECORDS.length - 1 }),
  action: fc.constantFrom('insert', 'update', 'delete'),
  data: payload,
})
const flush = fc.record({
  kind: fc.constant('flush' as const),
  fail: fc.constantFrom(false, false, 503, 422, 'network'),
})

type WriteStep = { rec: number; action: 'insert' | 'update' | 'delete'; data: Record<string, number> }

async function apply(client: ReturnType<ReturnType<typeof harness>['client']>, step: WriteStep) {
  const recordId = RECORDS[step.rec] as string
  if (step.action === 'insert') await client.insert('c', step.data, { recordId })
  else if (step.action === 'update') await client.update('c', recordId, step.data)
  else await client.delete('c', recordId)
}

describe('outbox property (fake-indexeddb + msw)', () => {
  it('all writes queued, then flushed: the batches concatenate to compact(raw)', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(write, { maxLength: 40 }), fc.integer({ min: 1, max: 6 }), async (steps, batchSize) => {
        const h = harness()
        const r = new ModelReceiver()
        server.use(r.handler)
        const client = h.client({ batchSize })
        const raw: Operation[] = []
        try {
          for (const step of steps) {
            try {
              await apply(client, step)
            } catch (error) {
              if (!(error instanceof SyncClientError) || error.code !== 'invalid_operation') throw error
              continue
            }
            const entries = await client.outbox()
            raw.push((entries.at(-1) as { operation: Operation }).operation)
          }
          const expected = compact(raw)
          expect(await client.pending()).toBe(expected.length)
          await client.flush()
          expect(r.sentOperations()).toEqual(expected)
          for (const q of r.requests) expect(q.operations.length).toBeLessThanOrEqual(batchSize)
          expect(r.records).toEqual(modelState(raw))
          expect(await client.outbox()).toEqual([])
        } finally {
          await h.closeAll()
        }
      }),
      { numRuns: 40 },
    )
  })

  it('writes, flushes and failures interleaved: the receiver ends in the state of the raw queue, each batch applied once', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.oneof(write, write, flush), { maxLength: 40 }), async (steps) => {
        const h = harness()
        const r = new ModelReceiver()
        server.use(r.handler)
        const client = h.client({ batchSize: 3, deadLetter: false })
        const raw: Operation[] = []
        try {
          for (const step of steps) {
            if (step.kind === 'flush') {
              if ((await client.pending()) === 0) continue
              if (step.fail === 503) r.reply(status(503))
              else if (step.fail === 'network') r.reply(() => Response.error())
              else if (step.fail === 422) r.reply(status(422))
              await client.flush()
              if (step.fail === 422) {
                // A rejected batch holds the queue until the app acts: here the receiver recovers.
                expect((await client.status()).state).toBe('blocked')
              }
              continue
            }
            const before = (await client.outbox()).length
            try {
              await apply(client, step)
            } catch (error) {
              if (!(error instanceof SyncClientError) || error.code !== 'invalid_operation') throw error
              expect((await client.outbox()).length).toBe(before)
              continue
            }
            const entries = await client.outbox()
            raw.push((entries.at(-1) as { operation: Operation }).operation)
          }
          await client.flush()
          expect(await client.pending()).toBe(0)
          expect(r.records).toEqual(modelState(raw))
          expect(new Set(r.appliedBatches).size).toBe(r.appliedBatches.length)
        } finally {
          await h.closeAll()
        }
      }),
      { numRuns: 60 },
    )
  })
})
