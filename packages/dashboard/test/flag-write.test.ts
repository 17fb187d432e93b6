// @vitest-environment happy-dom

import type { Operation } from '@flagsync/protocol'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { ApiError } from '../src/api.js'
import { buildFlag, draftOf } from '../src/flag-draft.js'
import {
  type BatchAnswer,
  type Delivery,
  deliveryOf,
  FlagConflictError,
  flagWriter,
  type Outbox,
} from '../src/flag-write.js'
import type { Environment } from '../src/types.js'

afterEach(() => vi.unstubAllGlobals())

/** An outbox that records each write and answers `delivery`. */
function answeringOutbox(delivery: Delivery) {
  const writes: Array<[string, Operation, boolean]> = []
  const outbox: Outbox = {
    write: async (envId, operation, deliver) => {
      writes.push([envId, operation, deliver])
      return deliver ? delivery : { kind: 'queued', reason: null }
    },
  }
  return { outbox, writes }
}

const update = (recordId: string): Operation => ({ action: 'update', collection: 'flags', recordId, changes: {} })
const answer = (status: number, body: unknown, operations = [update('other'), update('checkout')]): BatchAnswer => ({
  batchId: 'b1',
  status,
  body,
  operations,
  outboxIds: [1, 2],
})

describe("what a sync batch's answer says about one flag's operation", () => {
  it('200: applied, or the change request filed for that flag', () => {
    const body = { batchId: 'b1', applied: 2, change_requests: [{ operationIndex: 0, recordId: 'other', id: 9 }] }
    expect(deliveryOf(answer(200, body), 'checkout')).toEqual({ kind: 'applied' })
    expect(deliveryOf(answer(200, body), 'other')).toEqual({ kind: 'requested', id: 9 })
  })

  it("409: a conflict of this flag's edit; another flag's conflict decides nothing (the rest is sent again)", () => {
    const body = { error: 'x', code: 'conflict', conflicts: [{ operationIndex: 1, recordId: 'checkout', reason: 'r' }] }
    expect(deliveryOf(answer(409, body), 'checkout')).toEqual({ kind: 'conflict', reason: 'r' })
    expect(deliveryOf(answer(409, body), 'other')).toBeNull()
  })

  it('403/422 naming this operation: refused in the REST words; naming another, or 5xx: nothing decided', () => {
    const body = {
      error: 'operation 1 (update flags/checkout): invalid changes: operations[1].changes.rollout_percentage: too big',
      code: 'validation_failed',
      operationIndex: 1,
      issues: [{ path: 'operations[1].changes.rollout_percentage', message: 'too big' }],
    }
    expect(deliveryOf(answer(422, body), 'checkout')).toEqual({
      kind: 'refused',
      status: 422,
      body: {
        error: 'invalid changes',
        code: 'validation_failed',
        operationIndex: 1,
        issues: [{ path: 'rollout_percentage', message: 'too big' }],
      },
    })
    expect(deliveryOf(answer(422, body), 'other')).toBeNull()
    const forbidden = {
      error: 'operation 1: changing a flag needs the editor role',
      code: 'forbidden',
      operationIndex: 1,
    }
    expect(deliveryOf(answer(403, forbidden), 'checkout')).toMatchObject({
      kind: 'refused',
      status: 403,
      body: { error: 'changing a flag needs the editor role', code: 'forbidden' },
    })
    expect(deliveryOf(answer(503, { error: 'busy' }), 'checkout')).toBeNull()
  })
})

describe('the flag writer: every edit through the outbox', () => {
  it('queued, an update is an outbox operation with the revision seen as its base, not delivered', async () => {
    const fetch = vi.fn()
    vi.stubGlobal('fetch', fetch)
    const { outbox, writes } = answeringOutbox({ kind: 'applied' })
    const writer = flagWriter({ queued: true, outbox })
    expect(await writer.update('prod', 'checkout', { is_enabled: true }, 7)).toEqual({ kind: 'queued' })
    expect(await writer.remove('prod', 'checkout', 8)).toBe('queued')
    expect(writes).toEqual([
      [
        'prod',
        { action: 'update', collection: 'flags', recordId: 'checkout', changes: { is_enabled: true }, baseRevision: 7 },
        false,
      ],
      ['prod', { action: 'delete', collection: 'flags', recordId: 'checkout', baseRevision: 8 }, false],
    ])
    expect(fetch).not.toHaveBeenCalled()
  })

  it('without an open outbox, says that saving needs a connection', async () => {
    const writer = flagWriter({ queued: true, outbox: null })
    await expect(writer.update('prod', 'checkout', { is_enabled: true }, 7)).rejects.toThrow(
      'Saving needs a connection: the outbox that queues edits offline is not open.',
    )
  })

  it('online, delivers the update and reads the stored flag back', async () => {
    const stored = { key: 'checkout', is_enabled: true, revision: 8 }
    const fetch = vi.fn(async (_url: string) => new Response(JSON.stringify(stored), { status: 200 }))
    vi.stubGlobal('fetch', fetch)
    const { outbox, writes } = answeringOutbox({ kind: 'applied' })
    const outcome = await flagWriter({ queued: false, outbox }).update('prod', 'checkout', { is_enabled: true }, 7)
    expect(outcome).toEqual({ kind: 'saved', flags: [{ envId: 'prod', flag: stored }] })
    expect(writes[0]?.[2]).toBe(true)
    expect(fetch.mock.calls[0]?.[0]).toBe('/api/environments/prod/flags/checkout')
  })

  it("online, an approval environment's answer is the change request's number", async () => {
    const { outbox } = answeringOutbox({ kind: 'requested', id: 4 })
    const writer = flagWriter({ queued: false, outbox })
    expect(await writer.update('prod', 'checkout', { is_enabled: true }, 7)).toEqual({ kind: 'requested', id: 4 })
  })

  it('online, a conflict is a FlagConflictError pointing at the queued edits, a refusal the ApiError', async () => {
    const conflicting = flagWriter({ queued: false, outbox: answeringOutbox({ kind: 'conflict', reason: 'r' }).outbox })
    const conflict = await conflicting.update('prod', 'checkout', { rollout_percentage: 9 }, 7).catch((e) => e)
    expect(conflict).toBeInstanceOf(FlagConflictError)
    expect(conflict.message).toBe(
      'checkout changed since you opened it: r. Your edit waits under "Queued edits": keep yours or take theirs there.',
    )
    const body = { error: 'invalid changes', code: 'validation_failed', issues: [{ path: 'x', message: 'y' }] }
    const refusing = flagWriter({
      queued: false,
      outbox: answeringOutbox({ kind: 'refused', status: 422, body }).outbox,
    })
    const refused = await refusing.remove('prod', 'checkout', 7).catch((e) => e)
    expect(refused).toBeInstanceOf(ApiError)
    expect(refused).toMatchObject({ status: 422, body })
  })

  it('online, creating is one POST for every chosen environment, not the outbox', async () => {
    const fetch = vi.fn(async (_url: string) => new Response(JSON.stringify({ created: [] }), { status: 200 }))
    vi.stubGlobal('fetch', fetch)
    const { outbox, writes } = answeringOutbox({ kind: 'applied' })
    const env = { id: 'dev' } as Environment
    const flag = buildFlag({ ...draftOf(null), key: 'fresh' }).flag
    expect(await flagWriter({ queued: false, outbox }).create('p1', [env], flag)).toEqual({ kind: 'saved', flags: [] })
    expect(writes).toEqual([])
    expect(fetch.mock.calls[0]?.[0]).toBe('/api/projects/p1/flags')
  })

  it('online, a new flag carries its tags and owner in the one POST; queued, the inserts hold the definition only', async () => {
    const fetch = vi.fn(async (_url: string, _init?: RequestInit) => Response.json({ created: [] }))
    vi.stubGlobal('fetch', fetch)
    const { outbox, writes } = answeringOutbox({ kind: 'queued', reason: null })
    const env = { id: 'dev' } as Environment
    const flag = buildFlag({ ...draftOf(null), key: 'fresh' }).flag
    const meta = { tags: ['payments'], owner: 2 }
    await flagWriter({ queued: false, outbox }).create('p1', [env], flag, meta)
    const sent = JSON.parse(String(fetch.mock.calls[0]?.[1]?.body))
    expect(sent).toEqual({ flag: { ...flag, tags: ['payments'], owner: 2 }, environment_ids: ['dev'] })
    await flagWriter({ queued: true, outbox }).create('p1', [env], flag, meta)
    expect(writes).toHaveLength(1)
    expect(JSON.stringify(writes)).not.toMatch(/payments|owner/)
  })
})
