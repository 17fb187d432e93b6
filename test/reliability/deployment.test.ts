import { ConfigError, loadConfig } from '@flagsync/flat-api'
import { openSse, type SseReader } from '@flagsync/test-support/sse-reader'
import { afterEach, describe, expect, it } from 'vitest'
import { byKey, type ReliabilityServer, replayStream, startServer } from './harness.js'

/** The settings and behaviours docs/deployment.md relies on. */

const servers: ReliabilityServer[] = []
const readers: SseReader[] = []
afterEach(async () => {
  for (const r of readers.splice(0)) r.close()
  for (const s of servers.splice(0).reverse()) await s.dispose()
})

describe('settings', () => {
  it('keepAliveTimeout defaults to 65 s (above a 60 s balancer idle timeout), headersTimeout just above it', async () => {
    const server = await startServer({})
    servers.push(server)
    expect(server.server.keepAliveTimeout).toBe(65_000)
    expect(server.server.headersTimeout).toBe(66_000)
    // Streams are responses, so Node's request timeout (receiving the request) does not cut them.
    expect(server.server.requestTimeout).toBeGreaterThan(0)
  })

  it('KEEP_ALIVE_TIMEOUT_MS, STREAM_KEEPALIVE_MS, STREAM_MAX_BUFFER_BYTES and POLL_INTERVAL_MS are read and checked', async () => {
    const env = {
      KEEP_ALIVE_TIMEOUT_MS: '620000',
      STREAM_KEEPALIVE_MS: '50',
      STREAM_MAX_BUFFER_BYTES: '262144',
      POLL_INTERVAL_MS: '250',
    }
    const config = loadConfig(env, { port: 0 })
    expect(config).toMatchObject({
      keepAliveTimeoutMs: 620_000,
      keepAliveMs: 50,
      maxStreamBufferBytes: 262_144,
      pollIntervalMs: 250,
    })
    expect(loadConfig({}, { port: 0 })).toMatchObject({
      keepAliveTimeoutMs: 65_000,
      keepAliveMs: 15_000,
      maxStreamBufferBytes: 1024 * 1024,
      pollIntervalMs: 1000,
    })
    for (const [name, value] of [
      ['KEEP_ALIVE_TIMEOUT_MS', '65s'],
      ['KEEP_ALIVE_TIMEOUT_MS', '10'],
      ['STREAM_MAX_BUFFER_BYTES', '-1'],
      ['STREAM_MAX_BUFFER_BYTES', '1.5'],
    ] as const) {
      expect(() => loadConfig({ [name]: value }, { port: 0 }), `${name}=${value}`).toThrow(ConfigError)
    }

    const server = await startServer({ env })
    servers.push(server)
    expect(server.server.keepAliveTimeout).toBe(620_000)
    const stream = await openSse(`${server.url}/stream`)
    readers.push(stream)
    await stream.waitForCount(1)
    await new Promise((r) => setTimeout(r, 200))
    expect(stream.raw().match(/^: keep-alive$/gm)?.length ?? 0).toBeGreaterThanOrEqual(2)
  })

  it('the stream tells proxies not to buffer or transform it', async () => {
    const server = await startServer({})
    servers.push(server)
    const controller = new AbortController()
    const res = await fetch(`${server.url}/stream`, { signal: controller.signal })
    expect(res.headers.get('x-accel-buffering')).toBe('no')
    expect(res.headers.get('cache-control')).toBe('no-cache, no-transform')
    expect(res.headers.get('content-type')).toBe('text/event-stream; charset=utf-8')
    controller.abort()
  })
})

describe('N stateless instances on one PostgreSQL', () => {
  it('converge: same list, same ETag, same stream revision ids, whichever instance a request lands on', async () => {
    const a = await startServer({ dialect: 'postgres', config: { pollIntervalMs: 1000 } })
    servers.push(a)
    const b = await startServer({ databaseUrl: a.databaseUrl, config: { pollIntervalMs: 1000 } })
    const c = await startServer({ databaseUrl: a.databaseUrl, config: { pollIntervalMs: 1000 } })
    servers.push(b, c)
    const instances = [a, b, c]
    const streams = await Promise.all(instances.map((s) => openSse(`${s.url}/stream`)))
    readers.push(...streams)
    await Promise.all(streams.map((s) => s.waitForCount(1)))

    // Writes spread over the instances like a round-robin balancer would.
    for (let i = 0; i < 12; i++) {
      const target = instances[i % 3] as ReliabilityServer
      const res = await target.request('/api/flags', {
        method: 'POST',
        body: { key: `f${i % 5}`, is_enabled: i % 2 === 0 },
      })
      expect(res.status).toBe(200)
    }
    await Promise.all(streams.map((s) => s.waitFor((e) => e.id === '12', 5000)))
    const ids = streams.map((s) => s.events.filter((e) => e.id).map((e) => Number(e.id)))
    for (const list of ids) expect(list).toEqual(Array.from({ length: 12 }, (_, i) => i + 1))

    const lists = await Promise.all(instances.map((s) => s.request('/api/flags')))
    const etags = lists.map((r) => r.headers.get('etag'))
    expect(new Set(etags).size).toBe(1)
    const bodies = await Promise.all(lists.map((r) => r.text()))
    expect(new Set(bodies).size).toBe(1)
    // A conditional GET validated by one instance is valid on the others.
    const conditional = await c.request('/api/flags', { headers: { 'If-None-Match': etags[0] as string } })
    expect(conditional.status).toBe(304)
    for (const stream of streams)
      expect(byKey(replayStream(stream.events).flags)).toEqual(JSON.parse(bodies[0] as string))
  })

  it('a draining instance ends its streams; the client reconnects to another one and rebuilds the same state', async () => {
    const a = await startServer({ dialect: 'postgres' })
    servers.push(a)
    const b = await startServer({ databaseUrl: a.databaseUrl })
    servers.push(b)
    for (const key of ['x', 'y']) await a.request('/api/flags', { method: 'POST', body: { key, is_enabled: true } })
    const onA = await openSse(`${a.url}/stream`)
    readers.push(onA)
    await onA.waitForCount(3)
    await a.stop() // SIGTERM does this: streams end, the server closes, the database is released
    await onA.ended
    await b.request('/api/flags', { method: 'POST', body: { key: 'z', is_enabled: false } })
    const onB = await openSse(`${b.url}/stream`)
    readers.push(onB)
    const boot = await onB.waitForCount(4)
    expect(byKey(replayStream(boot).flags)).toEqual(await (await b.request('/api/flags')).json())
  })
})
