/**
 * A write racing the switch that turns require-approval on: the write's
 * request was authenticated and its environment loaded (approval off) before
 * the admin's switch committed, and the write's own transaction runs after
 * it. Such a write must follow the approval rules in force when it commits:
 * a sync batch files a change request, a PATCH answers 202 with one, and
 * replacing or promoting over an existing flag is refused (403), never
 * applied directly. The rules are read inside the write's transaction, which
 * serializes with the switch on the store's write lock.
 *
 * Each raced request sends its headers and all but the last byte of its body,
 * so the server loads its environment and then waits in the body parser (the
 * test sees the parser attach to the request); approval is switched on, then
 * the body finished. A batch sent whole before the switch applies directly, so
 * both orders occur in every round.
 */
import { randomUUID } from 'node:crypto'
import type { IncomingMessage } from 'node:http'
import { request } from 'node:http'
import { DIALECTS } from '@flagsync/test-support/databases'
import { afterEach, describe, expect, it } from 'vitest'
import { bearer, type Harness, type Json, startHarness } from '../harness.js'
import { changeRequestRows, createProject, flagsOf, member, putFlag, setRequireApproval, unique } from './support.js'

const ROUNDS = 3

interface Held {
  /** Sends the last byte and resolves with the answer. */
  finish(): Promise<{ status: number; body: Json }>
}

/**
 * Starts `method path` with a JSON body and holds back its last byte until
 * `finish`; resolves once the server is reading the body, that is, once every
 * middleware before the body parser (authentication, the environment) has run.
 */
async function holdBody(h: Harness, method: string, path: string, token: string, body: Json): Promise<Held> {
  const text = Buffer.from(JSON.stringify(body))
  const arrived = new Promise<IncomingMessage>((resolve) => {
    const onRequest = (req: IncomingMessage) => {
      if (req.url !== path || req.method !== method) return
      h.server.server.off('request', onRequest)
      resolve(req)
    }
    // First, before the app's own listener routes it (and rewrites `req.url` for mounted routers).
    h.server.server.prependListener('request', onRequest)
  })
  const { hostname, port } = new URL(h.url)
  const client = request({
    host: hostname,
    port,
    method,
    path,
    headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json', 'Content-Length': text.length },
  })
  const answer = new Promise<{ status: number; body: Json }>((resolve, reject) => {
    client.on('error', reject)
    client.on('response', (res) => {
      let data = ''
      res.on('data', (chunk: Buffer) => {
        data += chunk.toString('utf8')
      })
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: data === '' ? undefined : JSON.parse(data) }))
    })
  })
  client.write(text.subarray(0, -1))
  const req = await arrived
  // The body parser listens for the body only after authentication and the environment's guards have run.
  while (req.listenerCount('data') === 0) await new Promise((resolve) => setTimeout(resolve, 5))
  return {
    finish: () => {
      client.end(text.subarray(-1))
      return answer
    },
  }
}

describe.each(DIALECTS)('writes racing require-approval being switched on, on %s', (dialect) => {
  const harnesses: Harness[] = []
  afterEach(async () => {
    for (const h of harnesses.splice(0).reverse()) await h.dispose()
  })

  it('a batch, a PATCH, a replacement and a promotion that commit after the switch follow the approval rules', async () => {
    const h = await startHarness(dialect)
    harnesses.push(h)
    const project = await createProject(h)
    const env = project.production
    const editor = await member(h, project.id, 'editor', 'editor')
    const token = await h.createToken(editor.as, 'read_write')
    const sync = (operations: Json[]) => ({ batchId: randomUUID(), operations })
    const update = (key: string, description: string) => ({
      action: 'update',
      collection: 'flags',
      recordId: key,
      changes: { description },
    })

    for (let round = 0; round < ROUNDS; round++) {
      await setRequireApproval(h, project, env, false)
      const [before, batched, patched, replaced, promoted] = [
        'before',
        'batched',
        'patched',
        'replaced',
        'promoted',
      ].map((what) => unique(`${what}-${round}`)) as [string, string, string, string, string]
      for (const key of [before, batched, patched, replaced, promoted]) {
        await putFlag(h, env, { key, is_enabled: false, description: 'original' })
      }
      await putFlag(h, project.staging, { key: promoted, is_enabled: true, description: 'from staging' })
      const requestsBefore = (await changeRequestRows(h)).length

      // Sent whole before the switch: applied directly.
      const early = await h.call(`/api/environments/${env}/sync`, {
        method: 'POST',
        as: bearer(token),
        body: sync([update(before, 'before the switch')]),
      })
      expect(early.status, JSON.stringify(early.body)).toBe(200)
      expect(early.body.change_requests).toEqual([])

      const held: [Held, Held, Held, Held] = [
        await holdBody(h, 'POST', `/api/environments/${env}/sync`, token, sync([update(batched, 'by sync')])),
        await holdBody(h, 'PATCH', `/api/environments/${env}/flags/${patched}`, token, { description: 'by PATCH' }),
        await holdBody(h, 'POST', `/api/environments/${env}/flags`, token, {
          key: replaced,
          is_enabled: true,
          description: 'by POST',
        }),
        await holdBody(h, 'POST', `/api/environments/${project.staging}/flags/${promoted}/promote`, token, {
          target_env_id: env,
        }),
      ]
      await setRequireApproval(h, project, env, true)
      const [batch, patch, replace, promote] = await Promise.all([
        held[0].finish(),
        held[1].finish(),
        held[2].finish(),
        held[3].finish(),
      ])

      expect(batch.status, JSON.stringify(batch.body)).toBe(200)
      expect(batch.body.change_requests, 'the batch files a change request').toEqual([
        { operationIndex: 0, recordId: batched, id: expect.any(Number) },
      ])
      expect(patch.status, JSON.stringify(patch.body)).toBe(202)
      expect(replace.status, JSON.stringify(replace.body)).toBe(403)
      expect(replace.body.error).toMatch(/requires approval/)
      expect(promote.status, JSON.stringify(promote.body)).toBe(403)
      expect(promote.body.error).toMatch(/requires approval/)

      // Only the early batch changed a flag; the batch and the PATCH each filed one change request.
      const flags = flagsOf(h, env)
      expect((await flags.get(before)).body.description).toBe('before the switch')
      for (const key of [batched, patched, replaced, promoted]) {
        expect((await flags.get(key)).body.description, key).toBe('original')
      }
      expect((await changeRequestRows(h)).length - requestsBefore).toBe(2)
    }
  })
})

/**
 * The same race at the write lock itself, on PostgreSQL (SQLite has one
 * connection, so there a request cannot even load its environment while
 * another holds the lock): the switch waits for the lock first, then a batch
 * and a DELETE load their environment (approval still off) and queue behind it.
 */
describe('a sync batch and a DELETE queued behind the switch for the write lock, on postgres', () => {
  let h: Harness | undefined
  afterEach(async () => {
    await h?.dispose()
  })

  it('the batch files a change request and the DELETE is refused, instead of applying', async () => {
    h = await startHarness('postgres')
    const harness = h
    const project = await createProject(harness)
    const env = project.production
    const editor = await member(harness, project.id, 'editor', 'editor')
    const token = await harness.createToken(editor.as, 'read_write')
    const [key, doomed] = [unique('queued'), unique('doomed')]
    await putFlag(harness, env, { key, is_enabled: false, description: 'original' })
    await putFlag(harness, env, { key: doomed, is_enabled: false })
    const knex = harness.server.runtime.knex
    /** Resolves once `n` statements of this database wait for a lock. */
    const lockWaiters = async (n: number) => {
      for (;;) {
        const rows = (await knex('pg_stat_activity')
          .where({ datname: knex.raw('current_database()'), wait_event_type: 'Lock' })
          .count('* as count')) as Array<{ count: number | string }>
        if (Number(rows[0]?.count) >= n) return
        await new Promise((resolve) => setTimeout(resolve, 10))
      }
    }

    let release = () => {}
    const gate = new Promise<void>((resolve) => {
      release = resolve
    })
    const holding = harness.server.runtime.write(() => gate)
    const switched = harness.call(`/api/projects/${project.id}/environments/${env}/require-approval`, {
      method: 'POST',
      as: harness.admin,
      body: { require_approval: true },
    })
    await lockWaiters(1)
    const batch = harness.call(`/api/environments/${env}/sync`, {
      method: 'POST',
      as: bearer(token),
      body: {
        batchId: randomUUID(),
        operations: [{ action: 'update', collection: 'flags', recordId: key, changes: { description: 'queued' } }],
      },
    })
    await lockWaiters(2)
    const deleted = harness.call(`/api/environments/${env}/flags/${doomed}`, { method: 'DELETE', as: bearer(token) })
    await lockWaiters(3)
    release()
    await holding
    const [switchAnswer, batchAnswer, deleteAnswer] = await Promise.all([switched, batch, deleted])
    expect(switchAnswer.status).toBe(200)
    expect(batchAnswer.status, JSON.stringify(batchAnswer.body)).toBe(200)
    expect(batchAnswer.body.change_requests).toEqual([{ operationIndex: 0, recordId: key, id: expect.any(Number) }])
    expect((await flagsOf(harness, env).get(key)).body.description).toBe('original')
    expect(deleteAnswer.status, JSON.stringify(deleteAnswer.body)).toBe(403)
    expect((await flagsOf(harness, env).get(doomed)).status).toBe(200)
  })
})
