import { connect, type Socket } from 'node:net'
import { FlagStore, openDatabase } from '@flagsync/store'
import { createTestDatabase, DIALECTS, type TestDatabase } from '@flagsync/test-support/databases'
import { type SpawnedServer, spawnServer } from '@flagsync/test-support/spawn-server'
import { openSse, type SseReader } from '@flagsync/test-support/sse-reader'
import { afterEach, describe, expect, it } from 'vitest'
import { byKey, type ReliabilityServer, replayStream, startServer } from './harness.js'

const servers: ReliabilityServer[] = []
const readers: SseReader[] = []
const sockets: Socket[] = []
const children: SpawnedServer[] = []
const databases: TestDatabase[] = []
afterEach(async () => {
  for (const s of sockets.splice(0)) s.destroy()
  for (const r of readers.splice(0)) r.close()
  for (const c of children.splice(0)) c.kill()
  for (const s of servers.splice(0).reverse()) await s.dispose()
  for (const d of databases.splice(0)) await d.drop()
})

async function start(options: Parameters<typeof startServer>[0]) {
  const server = await startServer(options)
  servers.push(server)
  return server
}
async function subscribe(url: string) {
  const reader = await openSse(`${url}/stream`)
  readers.push(reader)
  return reader
}
const post = (url: string, flag: Record<string, unknown>) =>
  fetch(`${url}/api/flags`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify(flag),
  })
const list = async (url: string) => (await fetch(`${url}/api/flags`)).json()

describe.each(DIALECTS)('the stream across server restarts on %s', (dialect) => {
  it('after a graceful restart on the same database and port, a reconnecting subscriber gets connected + every flag', async () => {
    const first = await start({ dialect })
    const { port } = first
    for (const key of ['a', 'b', 'c']) await post(first.url, { key, is_enabled: true, description: `v1 ${key}` })
    const before = await subscribe(first.url)
    await before.waitForCount(4)
    await post(first.url, { key: 'b', is_enabled: false })
    await fetch(`${first.url}/api/flags/c`, { method: 'DELETE' })
    await before.waitForCount(6)
    const lastSeen = Number(before.events.at(-1)?.id)

    await first.stop()
    // The server ends the stream instead of leaving subscribers hanging on a dead socket.
    await before.ended

    // Another instance writes while this one is down: the restarted server must serve it too.
    const db = await openDatabase(first.databaseUrl)
    try {
      await new FlagStore(db).write(async (w) => {
        w.put({ key: 'written-while-down', is_enabled: true, rollout_percentage: null, description: null, rules: [] })
      })
    } finally {
      await db.close()
    }

    const second = await start({ databaseUrl: first.databaseUrl, config: { port } })
    expect(second.url).toBe(first.url)
    const after = await subscribe(second.url)
    const expected = await list(second.url)
    expect(expected.map((f: { key: string }) => f.key)).toEqual(['a', 'b', 'written-while-down'])
    const boot = await after.waitForCount(1 + expected.length)
    expect(boot[0]).toMatchObject({ event: 'connected', data: 'true' })
    expect(byKey(replayStream(boot).flags)).toEqual(expected)

    // Live events continue the revision sequence where the old process left off.
    await post(second.url, { key: 'after-restart', is_enabled: true })
    const live = await after.waitFor((e) => e.data.includes('after-restart'))
    expect(Number(live.id)).toBe(lastSeen + 2)
  })

  it('after a crash (SIGKILL) of the server process, a new process on the same database serves every flag', async () => {
    const db = await createTestDatabase(dialect)
    databases.push(db)
    const env = { DATABASE_URL: db.url, POLL_INTERVAL_MS: '100' }
    const first = await spawnServer('packages/flat-api/dist/cli.js', env)
    children.push(first)
    for (let i = 0; i < 20; i++)
      expect((await post(first.url, { key: `f${i}`, is_enabled: i % 2 === 0 })).status).toBe(200)
    const stream = await subscribe(first.url)
    await stream.waitForCount(21)
    const port = new URL(first.url).port

    first.kill('SIGKILL')
    await first.exited
    await stream.ended

    const second = await spawnServer('packages/flat-api/dist/cli.js', { ...env, PORT: port })
    children.push(second)
    expect(second.url).toBe(first.url)
    const again = await subscribe(second.url)
    const boot = await again.waitForCount(21)
    expect(byKey(replayStream(boot).flags)).toEqual(await list(second.url))
    expect(replayStream(boot).flags).toEqual(replayStream(stream.events).flags)
  })
})

describe.each(DIALECTS)('a subscriber that stops reading on %s', (dialect) => {
  it('is dropped once its buffer passes the limit, while a reading subscriber gets every event', async () => {
    const maxBytes = 64 * 1024
    const server = await start({ dialect, extras: { maxStreamBufferBytes: maxBytes } })
    const reader = await subscribe(server.url)
    await reader.waitForCount(1)

    // A raw connection that sends the request and then never reads a byte.
    const slow = connect(server.port, '127.0.0.1')
    sockets.push(slow)
    await new Promise<void>((resolve) => slow.once('connect', () => resolve()))
    slow.pause()
    slow.write('GET /stream HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n')
    await expect.poll(() => server.runtime.hub.size(), { timeout: 5000 }).toBe(2)

    // ~100 KB per flag (20 rules' worth of long values), so the kernel's socket buffers fill quickly.
    const values = Array.from({ length: 100 }, (_, i) => `${i}`.padEnd(1000, 'x'))
    let writes = 0
    while (server.runtime.hub.droppedCount === 0) {
      if (writes >= 400) throw new Error(`not dropped after ${writes} writes of ~100 KB`)
      const res = await post(server.url, {
        key: `big-${writes}`,
        is_enabled: true,
        rules: [{ attribute: 'id', operator: 'equals', values }],
      })
      expect(res.status).toBe(200)
      writes++
    }
    expect(server.runtime.hub.droppedCount).toBe(1)
    expect(server.runtime.hub.size()).toBe(1)
    // The server really ended that connection: reading now drains what was buffered, then the socket closes.
    const closed = new Promise<void>((resolve) => slow.once('close', () => resolve()))
    slow.resume()
    await closed

    // The reading subscriber kept up: every write arrived, in revision order, intact.
    for (let i = 0; i < 3; i++) {
      await post(server.url, { key: `after-${i}`, is_enabled: true })
      writes++
    }
    const events = await reader.waitForCount(1 + writes, 20_000)
    const { flags, revisions } = replayStream(events)
    expect(revisions).toEqual(Array.from({ length: writes }, (_, i) => i + 1))
    expect(byKey(flags)).toEqual(await list(server.url))
    expect(server.runtime.hub.droppedCount).toBe(1)
  })

  it('a subscriber that never reads its 12 MB bootstrap keeps it queued, and is dropped once more than the limit queued behind it', async () => {
    // 120 flags of ~100 KB: the bootstrap alone (12 MB) is more than the kernel's socket buffers hold.
    const server = await start({ dialect, extras: { maxStreamBufferBytes: 64 * 1024 } })
    const values = Array.from({ length: 100 }, (_, i) => `${i}`.padEnd(1000, 'x'))
    for (let i = 0; i < 120; i++) {
      const res = await server.request('/api/flags', {
        method: 'POST',
        body: { key: `f${i}`, is_enabled: true, rules: [{ attribute: 'id', operator: 'equals', values }] },
      })
      expect(res.status).toBe(200)
    }
    const slow = connect(server.port, '127.0.0.1')
    sockets.push(slow)
    await new Promise<void>((resolve) => slow.once('connect', () => resolve()))
    slow.pause()
    slow.write('GET /stream HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n')
    await expect.poll(() => server.runtime.hub.size(), { timeout: 5000 }).toBe(1)
    // The bootstrap is one shared buffer and does not count: 20 small changes (~3 KB) queue behind it.
    for (let i = 0; i < 20; i++) {
      await server.request('/api/flags', { method: 'POST', body: { key: `n${i}`, is_enabled: true } })
    }
    expect(server.runtime.hub.droppedCount).toBe(0)
    // ~100 KB changes: the first brings what is queued behind the bootstrap past 64 KiB, the next write drops it.
    let big = 0
    while (server.runtime.hub.droppedCount === 0 && big < 3) {
      await server.request('/api/flags/f0', { method: 'PATCH', body: { is_enabled: big % 2 === 1 } })
      big++
    }
    expect(big).toBe(2)
    expect(server.runtime.hub.droppedCount).toBe(1)
    await expect.poll(() => server.runtime.hub.size()).toBe(0)
  })
})

describe('PostgreSQL LISTEN connection loss', () => {
  it('another instance re-listens after its LISTEN connection is killed, so changes still arrive without the poll', async () => {
    const a = await start({ dialect: 'postgres', config: { pollIntervalMs: 600_000 } })
    const b = await start({ databaseUrl: a.databaseUrl, config: { pollIntervalMs: 600_000 } })
    const stream = await subscribe(b.url)
    await stream.waitForCount(1)
    await post(a.url, { key: 'before', is_enabled: true })
    await stream.waitFor((e) => e.data.includes('"before"'), 3000)

    const { knex } = a.runtime.db
    const killed = await knex.raw(
      "select pg_terminate_backend(pid) as ok from pg_stat_activity where datname = current_database() and query ilike 'LISTEN%' and pid <> pg_backend_pid()",
    )
    expect(killed.rows.length).toBeGreaterThanOrEqual(2) // both instances listen

    // The feed retries LISTEN after about a second and then catches up on what it missed.
    await post(a.url, { key: 'after-kill', is_enabled: true })
    await stream.waitFor((e) => e.data.includes('"after-kill"'), 10_000)
    await post(a.url, { key: 'after-relisten', is_enabled: true })
    await stream.waitFor((e) => e.data.includes('"after-relisten"'), 3000)
    expect(await list(b.url)).toEqual(await list(a.url))
  })
})
