import type { Operation } from '@flagsync/protocol'
import { createSyncClient, type SyncClient } from '@flagsync/sync-client'
import { IDBFactory, IDBKeyRange } from 'fake-indexeddb'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import {
  createProject,
  flagsOf,
  member,
  type Project,
  putFlag,
  setRequireApproval,
} from '../../flag-service/test/flags/support.js'
import { type Caller, type Harness, headersFor, startHarness } from '../../flag-service/test/harness.js'
import { ApiError, errorText } from '../src/api.js'
import { explainCycle } from '../src/flag-view.js'
import type { Outbox } from '../src/flag-write.js'
import { answerTap, deliveringOutbox } from '../src/outbox-delivery.js'

/**
 * The dashboard's outbox as the page runs it: a real sync client per
 * environment (IndexedDB in fake-indexeddb, started, pushing after each
 * write) delivering to a real flag service's `POST …/sync` as a signed-in
 * editor, with the tap that keeps the service's answer per batch.
 */
describe('the outbox delivers each flag edit at once and answers what the service decided', () => {
  let h: Harness
  let p: Project
  let editor: Caller
  const clients = new Map<string, SyncClient>()
  let outbox: Outbox

  beforeAll(async () => {
    h = await startHarness('sqlite')
    p = await createProject(h)
    editor = (await member(h, p.id, 'editor', 'editor')).as
    await setRequireApproval(h, p, p.production, true)
    const entries = new Map<string, { client: SyncClient; tap: ReturnType<typeof answerTap> }>()
    outbox = deliveringOutbox((envId) => {
      let entry = entries.get(envId)
      if (!entry) {
        const tap = answerTap()
        const client = createSyncClient({
          webhookUrl: `${h.url}/api/environments/${envId}/sync`,
          headers: headersFor(editor),
          indexedDB: new IDBFactory(),
          IDBKeyRange,
          fetch: tap.fetch,
          locks: null,
          broadcastChannel: null,
        })
        tap.attach(client)
        client.start()
        entry = { client, tap }
        entries.set(envId, entry)
        clients.set(envId, client)
      }
      return entry
    }, 5_000)
  })
  afterEach(async () => {
    for (const client of clients.values()) expect(await client.pending()).toBe(0)
  })
  afterAll(async () => {
    for (const client of clients.values()) await client.close()
    await h?.dispose()
  })

  const revisionOf = async (envId: string, key: string) => (await flagsOf(h, envId).get(key)).body.revision as number
  const update = (key: string, changes: Record<string, unknown>, baseRevision?: number): Operation => ({
    action: 'update',
    collection: 'flags',
    recordId: key,
    changes,
    ...(baseRevision === undefined ? {} : { baseRevision }),
  })

  it('applies an edit where no approval is required, and nothing stays queued', async () => {
    await putFlag(h, p.development, { key: 'banner', is_enabled: false })
    const base = await revisionOf(p.development, 'banner')
    expect(await outbox.write(p.development, update('banner', { is_enabled: true }, base), true)).toEqual({
      kind: 'applied',
    })
    expect((await flagsOf(h, p.development).get('banner')).body.is_enabled).toBe(true)
  })

  it("answers an edit in an approval environment with the change request's number", async () => {
    await putFlag(h, p.production, { key: 'banner', is_enabled: false })
    const base = await revisionOf(p.production, 'banner')
    const delivery = await outbox.write(p.production, update('banner', { is_enabled: true }, base), true)
    const requests = await h.call(`/api/environments/${p.production}/change-requests`, { as: h.admin })
    const filed = (requests.body as Array<{ id: number; flag_key: string }>).find((r) => r.flag_key === 'banner')
    expect(filed).toBeDefined()
    expect(delivery).toEqual({ kind: 'requested', id: filed?.id })
    expect((await flagsOf(h, p.production).get('banner')).body.is_enabled).toBe(false)
  })

  it('answers an edit on a stale base with the conflict, kept for the pending panel', async () => {
    await putFlag(h, p.staging, { key: 'rollout', is_enabled: true, rollout_percentage: 10 })
    const base = await revisionOf(p.staging, 'rollout')
    expect((await flagsOf(h, p.staging).patch('rollout', { rollout_percentage: 20 })).status).toBe(200)
    const delivery = await outbox.write(p.staging, update('rollout', { rollout_percentage: 90 }, base), true)
    expect(delivery).toMatchObject({ kind: 'conflict', reason: expect.stringContaining('rollout_percentage') })
    const conflicts = await clients.get(p.staging)?.conflicts()
    expect(conflicts?.map((c) => c.recordId)).toEqual(['rollout'])
    await clients.get(p.staging)?.resolve(conflicts?.[0]?.id as number, 'theirs')
    expect((await flagsOf(h, p.staging).get('rollout')).body.rollout_percentage).toBe(20)
  })

  it('answers an invalid edit with the 422 naming the field, discarded so the next edit goes through', async () => {
    const delivery = await outbox.write(p.development, update('banner', { rollout_percentage: 500 }), true)
    expect(delivery).toMatchObject({ kind: 'refused', status: 422 })
    if (delivery.kind !== 'refused') return
    expect(delivery.body.issues?.map((i) => i.path)).toEqual(['rollout_percentage'])
    expect(delivery.body.error).not.toMatch(/^operation \d/)
    const client = clients.get(p.development) as SyncClient
    expect(await client.outbox()).toEqual([])
    expect((await client.status()).state).not.toBe('blocked')
    expect(await outbox.write(p.development, update('banner', { rollout_percentage: 50 }), true)).toEqual({
      kind: 'applied',
    })
    expect((await flagsOf(h, p.development).get('banner')).body.rollout_percentage).toBe(50)
  })

  it('explains a prerequisite cycle the sync route refuses, as the editor shows it', async () => {
    await putFlag(h, p.development, { key: 'cart', is_enabled: true })
    await putFlag(h, p.development, { key: 'pay', is_enabled: true, prerequisites: [{ flag_key: 'cart' }] })
    const refused = await outbox.write(p.development, update('cart', { prerequisites: [{ flag_key: 'pay' }] }), true)
    expect(refused.kind).toBe('refused')
    if (refused.kind !== 'refused') return
    expect(explainCycle(errorText(new ApiError(refused.status, refused.body)))).toMatch(
      /go round in a circle: “cart” requires “pay” and “pay” requires “cart”/,
    )
  })

  it('an edit queued offline and refused later is dropped by the ids the sync status names, unblocking the rest', async () => {
    const client = clients.get(p.development) as SyncClient
    client.stop()
    try {
      await outbox.write(p.development, update('banner', { rollout_percentage: 500 }), false)
      await client.flush()
      await outbox.write(p.development, update('banner', { description: 'after the refusal' }), false)
      const { state, lastError } = await client.status()
      expect(state).toBe('blocked')
      // What the pending panel's "Discard the refused edit" passes.
      expect(await client.discard(lastError?.outboxIds ?? [])).toBe(1)
      await client.flush()
    } finally {
      client.start()
    }
    const stored = (await flagsOf(h, p.development).get('banner')).body
    expect(stored).toMatchObject({ description: 'after the refusal', rollout_percentage: 50 })
  })

  it('says why an edit stays queued when the service cannot be reached, and keeps it in the outbox', async () => {
    const tap = answerTap()
    const client = createSyncClient({
      // Nothing listens on port 9 (discard) here: the delivery fails without an answer.
      webhookUrl: `http://127.0.0.1:9/api/environments/${p.development}/sync`,
      indexedDB: new IDBFactory(),
      IDBKeyRange,
      fetch: tap.fetch,
      locks: null,
      broadcastChannel: null,
    })
    tap.attach(client)
    try {
      const unreachable = deliveringOutbox(() => ({ client, tap }), 5_000)
      const delivery = await unreachable.write(p.development, update('banner', { is_enabled: false }), true)
      expect(delivery).toMatchObject({ kind: 'queued', reason: expect.stringMatching(/^the last attempt failed: /) })
      expect(await client.pending()).toBe(1)
    } finally {
      await client.close()
    }
  })

  it('queues without sending when told not to deliver (offline)', async () => {
    const client = clients.get(p.development) as SyncClient
    client.stop()
    try {
      expect(await outbox.write(p.development, update('banner', { description: 'later' }), false)).toEqual({
        kind: 'queued',
        reason: null,
      })
      expect(await client.pending()).toBe(1)
    } finally {
      client.start()
      await client.flush()
    }
    expect((await flagsOf(h, p.development).get('banner')).body.description).toBe('later')
  })
})
