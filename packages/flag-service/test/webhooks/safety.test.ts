import { Writable } from 'node:stream'
import { createLogger } from '@flagsync/server-kit'
import { createTestDatabase, type TestDatabase } from '@flagsync/test-support/databases'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { loadServiceConfig, startFlagServiceServer } from '../../src/index.js'
import { isRefusedAddress, WEBHOOK_TABLES } from '../../src/webhooks/index.js'
import { putFlag } from '../flags/support.js'
import { bearer, type Caller, type Harness, headersFor, startHarness } from '../harness.js'
import { eventually, type Receiver, startReceiver } from './support.js'

describe('the address policy', () => {
  it('refuses loopback, private, link-local, metadata and mapped addresses; admits public ones', () => {
    for (const address of [
      '127.0.0.1',
      '127.1.2.3',
      '0.0.0.0',
      '10.1.2.3',
      '172.16.0.1',
      '192.168.1.1',
      '169.254.169.254',
      '100.64.0.1',
      '224.0.0.1',
      '255.255.255.255',
      '::1',
      '::',
      'fe80::1',
      'fd00:ec2::254',
      'fc00::1',
      '::ffff:127.0.0.1',
      '::ffff:a9fe:a9fe',
      '64:ff9b::7f00:1',
      'not-an-ip',
    ]) {
      expect(isRefusedAddress(address), address).toBe(true)
    }
    for (const address of ['93.184.216.34', '8.8.8.8', '2606:4700:4700::1111', '172.32.0.1']) {
      expect(isRefusedAddress(address), address).toBe(false)
    }
  })
})

describe('webhook targets on private addresses', () => {
  let h: Harness
  let receiver: Receiver
  beforeAll(async () => {
    // WEBHOOK_ALLOW_PRIVATE_TARGETS unset: the production default.
    h = await startHarness('sqlite', { clockStart: Date.now(), env: { WEBHOOK_POLL_MS: '20' } })
    receiver = await startReceiver()
  })
  afterAll(async () => {
    await h?.dispose()
    await receiver?.close()
  })

  it('are refused at send time, by IP literal and by resolved name, and nothing reaches them', async () => {
    const port = new URL(receiver.url).port
    const env = await defaultEnvironment(h, h.admin)
    const ids: string[] = []
    for (const url of [receiver.url, `http://localhost:${port}/hook`, `http://[::ffff:127.0.0.1]:${port}/hook`]) {
      const res = await h.call(`/api/projects/${h.defaultProjectId}/webhooks`, {
        method: 'POST',
        as: h.admin,
        body: { url, events: ['flag.created'] },
      })
      expect(res.status).toBe(200)
      ids.push(res.body.id)
    }
    await putFlag(h, env, { key: 'ssrf', is_enabled: true })
    const rows = await eventually(async () => {
      const all = await h.server.runtime.knex(WEBHOOK_TABLES.deliveries).whereIn('webhook_id', ids)
      expect(all).toHaveLength(3)
      expect(all.every((d) => Number(d.attempts) >= 1)).toBe(true)
      return all
    })
    for (const row of rows) {
      expect(row).toMatchObject({ status: 'pending', last_status: null })
      expect(row.last_error).toContain('refused')
    }
    expect(receiver.received).toHaveLength(0)
  })
})

describe('the webhook secret in logs', () => {
  let db: TestDatabase
  let receiver: Receiver
  const lines: string[] = []
  let secrets: string[] = []
  beforeAll(async () => {
    db = await createTestDatabase('sqlite')
    receiver = await startReceiver()
  })
  afterAll(async () => {
    await receiver?.close()
    await db?.drop()
  })

  it('never appears, at any level, through creation, rotation, failed and delivered attempts', async () => {
    const sink = new Writable({
      write(chunk, _encoding, done) {
        lines.push(String(chunk))
        done()
      },
    })
    const config = loadServiceConfig({
      PORT: '0',
      DATABASE_URL: db.url,
      ADMIN_EMAIL: 'admin@example.com',
      ADMIN_PASSWORD: 'correct horse battery',
      WORKSPACE_NAME: 'Acme',
      WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
      WEBHOOK_POLL_MS: '20',
      WEBHOOK_RETRY_BASE_MS: '1',
    })
    const server = await startFlagServiceServer(config, createLogger({ level: 'trace' }, sink))
    try {
      if (server.setup.status !== 'created') throw new Error('no setup')
      const key: Caller = bearer(server.setup.sdkKey)
      const call = async (path: string, method = 'GET', body?: unknown) => {
        const res = await fetch(`${server.url}${path}`, {
          method,
          headers: { ...headersFor(key), 'content-type': 'application/json' },
          body: body === undefined ? undefined : JSON.stringify(body),
        })
        return { status: res.status, body: await res.json() }
      }
      const base = `/api/projects/${server.setup.projectId}/webhooks`
      const created = await call(base, 'POST', { url: receiver.url, events: ['*'] })
      const rotated = await call(`${base}/${created.body.id}`, 'PATCH', { rotate_secret: true })
      secrets = [created.body.secret as string, rotated.body.secret as string]
      receiver.secret = secrets[1] as string
      receiver.answer = () => (receiver.received.length < 3 ? { status: 500, body: 'no' } : { status: 200 })
      const env = await call(`/api/projects/${server.setup.projectId}/environments`)
      const flags = `/api/environments/${env.body[0].id}/flags`
      expect((await call(flags, 'POST', { key: 'logged', is_enabled: true })).status).toBe(200)
      await receiver.waitFor(3)
      expect(receiver.received.every((r) => r.verifyError === null)).toBe(true)
      expect(lines.join('')).toContain('webhook delivery failed')
    } finally {
      await server.close()
    }
    const log = lines.join('')
    expect(log.length).toBeGreaterThan(0)
    for (const line of lines) {
      for (const secret of secrets) {
        expect(line).not.toContain(secret)
        expect(line).not.toContain(secret.slice('whsec_'.length))
      }
    }
  })
})

async function defaultEnvironment(h: Harness, as: Caller): Promise<string> {
  const envs = await h.call(`/api/projects/${h.defaultProjectId}/environments`, { as })
  return envs.body[0].id as string
}
