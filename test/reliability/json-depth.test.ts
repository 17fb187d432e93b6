import { loadReceiverConfig, startReceiverServer } from '@flagsync/receiver'
import { silentLogger } from '@flagsync/server-kit'
import { createTestDatabase, type TestDatabase } from '@flagsync/test-support/databases'
import { startTestServer, type TestServer } from '@flagsync/test-support/test-server'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createProject, flagsOf, type Project } from '../../packages/flag-service/test/flags/support.js'
import { type Harness, startHarness } from '../../packages/flag-service/test/harness.js'

/**
 * A `default_value` nested 2 000 deep would overflow the stack in zod's
 * recursive JSON schema, a 500. Every JSON body of every server is refused
 * past 64 levels of nesting with a 422, before
 * any schema runs.
 */

const nested = (depth: number, leaf: unknown = 1): unknown => {
  let value: unknown = leaf
  for (let i = 0; i < depth; i++) value = i % 2 === 0 ? [value] : { v: value }
  return value
}
/** The same as text, for depths JSON.stringify itself cannot reach. */
const nestedText = (depth: number) => `${'['.repeat(depth)}1${']'.repeat(depth)}`
const DEPTH_ERROR = { error: 'JSON nested deeper than 64 levels', code: 'validation_failed', max_depth: 64 }

describe('JSON nesting is bounded (64 levels) on every server', () => {
  let h: Harness
  let project: Project
  let flat: TestServer
  let receiverDb: TestDatabase
  let receiver: Awaited<ReturnType<typeof startReceiverServer>>
  const token = 'r'.repeat(32)

  beforeAll(async () => {
    h = await startHarness('sqlite')
    project = await createProject(h)
    flat = await startTestServer()
    receiverDb = await createTestDatabase('sqlite')
    receiver = await startReceiverServer(
      loadReceiverConfig({ PORT: '0', DATABASE_URL: receiverDb.url, RECEIVER_TOKEN: token }),
      { logger: silentLogger() },
    )
  })
  afterAll(async () => {
    await receiver?.close()
    await receiverDb?.drop()
    await flat?.dispose()
    await h?.dispose()
  })

  it('the flag service: a json default_value nested 2 000 deep is a 422, not a 500; 60 deep is stored', async () => {
    const flags = flagsOf(h, project.production)
    for (const depth of [65, 2_000, 100_000]) {
      const res = await h.call(`/api/environments/${project.production}/flags`, {
        method: 'POST',
        as: h.admin,
        body: `{"key":"deep","is_enabled":true,"flag_type":"json","default_value":${nestedText(depth)}}`,
      })
      expect(res.status).toBe(422)
      expect(res.body).toEqual(DEPTH_ERROR)
    }
    expect((await flags.get('deep')).status).toBe(404)
    // The body's own object is level 1: a value at 60 levels fits.
    const fits = await flags.put({ key: 'deep', is_enabled: true, flag_type: 'json', default_value: nested(60) })
    expect(fits.status).toBe(200)
    expect(fits.body.default_value).toEqual(nested(60))
  })

  it('the flag service: every JSON route refuses it, authenticated or not (login, segments, impressions)', async () => {
    const deep = nested(100)
    const login = await h.call('/api/auth/login', { method: 'POST', body: { email: deep, password: 'x' } })
    expect(login).toMatchObject({ status: 422, body: DEPTH_ERROR })
    const segment = await h.call(`/api/projects/${project.id}/segments`, {
      method: 'POST',
      as: h.admin,
      body: { key: 's', name: 'S', rules: deep },
    })
    expect(segment).toMatchObject({ status: 422, body: DEPTH_ERROR })
    const impressions = await h.call(`/api/environments/${project.production}/impressions`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${project.sdkKey}` },
      body: [{ flag_key: 'f', user_id: 'u', value: true, context: deep }],
    })
    expect(impressions).toMatchObject({ status: 422, body: DEPTH_ERROR })
  })

  it('the flat API: /api/flags and /sync', async () => {
    const put = await flat.request('/api/flags', {
      method: 'POST',
      body: { key: 'k', is_enabled: true, x: nested(100) },
    })
    expect(put.status).toBe(422)
    expect(await put.json()).toEqual(DEPTH_ERROR)
    const sync = await flat.request('/sync', {
      method: 'POST',
      body: {
        batchId: 'b1',
        operations: [{ action: 'insert', collection: 'flags', recordId: 'k', record: nested(100) }],
      },
    })
    expect(sync.status).toBe(422)
    expect(await sync.json()).toEqual(DEPTH_ERROR)
  })

  it('the standalone receiver: /sync', async () => {
    const res = await fetch(`${receiver.url}/sync`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
      body: `{"batchId":"b1","operations":[${nestedText(200_000)}]}`,
    })
    expect(res.status).toBe(422)
    expect(await res.json()).toEqual(DEPTH_ERROR)
  })
})
