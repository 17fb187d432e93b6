import { DIALECTS } from '@flagsync/test-support/databases'
import { type HeldSse, openHeldSse } from '@flagsync/test-support/held-sse'
import { streamServers } from '@flagsync/test-support/stream-servers'
import type { TestServer } from '@flagsync/test-support/test-server'
import { afterEach, describe, expect, it } from 'vitest'

const MiB = 1024 * 1024
/** STREAM_MAX_BUFFER_BYTES of these servers: far below their bootstraps. */
const CAP = 64 * 1024
/** ~900 KB of rule values: 14 such flags make a 12.6 MB bootstrap, more than the kernel's socket buffers hold. */
const heavyRules = (tag: string) =>
  Array.from({ length: 9 }, (_, r) => ({
    attribute: `id${r}`,
    operator: 'equals',
    values: Array.from({ length: 100 }, (_, i) => `${tag}-${r}-${i}-`.padEnd(1000, 'x')),
  }))

async function put(server: TestServer, flag: Record<string, unknown>): Promise<void> {
  const res = await server.request('/api/flags', { method: 'POST', body: flag })
  expect(res.status, await res.clone().text()).toBe(200)
}

/**
 * STREAM_MAX_BUFFER_BYTES bounds what piles up behind a subscriber's
 * bootstrap: the bootstrap itself is written whole, however large.
 */
describe.each(DIALECTS)('/stream with a bootstrap larger than STREAM_MAX_BUFFER_BYTES on %s', (dialect) => {
  const { start, subscribe } = streamServers(dialect, { env: { STREAM_MAX_BUFFER_BYTES: String(CAP) } })
  const held: HeldSse[] = []
  afterEach(() => {
    for (const h of held.splice(0)) h.close()
  })

  it('a subscriber gets connected, 110 flags of 10 000-character descriptions (1.1 MB) and the end marker, then live updates', async () => {
    const server = await start()
    expect(server.config.maxStreamBufferBytes).toBe(CAP)
    for (let i = 0; i < 110; i++) {
      await put(server, { key: `wide-${i}`, is_enabled: true, description: `${i}`.padEnd(10_000, 'd') })
    }
    const stream = await subscribe(server)
    const boot = await stream.waitForCount(111, 10_000)
    await expect.poll(() => stream.raw().includes(': bootstrap complete')).toBe(true)
    expect(stream.raw().length).toBeGreaterThan(MiB)
    expect(boot[0]?.event).toBe('connected')
    expect(boot.slice(1).map((e) => JSON.parse(e.data).flag.description.length)).toEqual(Array(110).fill(10_000))

    await server.request('/api/flags/wide-7', { method: 'PATCH', body: { is_enabled: false } })
    const [update] = (await stream.waitForCount(112)).slice(111)
    expect(JSON.parse(update?.data ?? '{}').flag).toMatchObject({ key: 'wide-7', is_enabled: false })
    expect(server.runtime.hub.droppedCount).toBe(0)
  })

  it('a subscriber that reads only after changes were queued behind its 12.6 MB bootstrap gets all of it', async () => {
    const server = await start()
    for (let i = 0; i < 14; i++) await put(server, { key: `heavy-${i}`, is_enabled: true, rules: heavyRules(`${i}`) })
    const stream = await openHeldSse(`${server.url}/stream`)
    held.push(stream)
    expect(stream.status).toBe(200)
    // Both written while nearly all of the bootstrap is still queued unsent on the server.
    await put(server, { key: 'late-1', is_enabled: true })
    await server.request('/api/flags/heavy-3', { method: 'PATCH', body: { is_enabled: false } })
    expect(server.runtime.hub.droppedCount).toBe(0)

    stream.read()
    await stream.waitFor((e) => e.data.includes('"heavy-3"') && e.data.includes('"is_enabled":false'), 30_000)
    const flags = stream.events.slice(1).map((e) => JSON.parse(e.data).flag)
    expect(stream.events[0]?.event).toBe('connected')
    expect(flags.map((f) => f.key)).toEqual([
      ...Array.from({ length: 14 }, (_, i) => `heavy-${i}`),
      'late-1',
      'heavy-3',
    ])
    expect(server.runtime.hub.droppedCount).toBe(0)
  }, 60_000)

  it('a resumed stream (Last-Event-ID) whose missed changes pass the cap gets them all, then live updates', async () => {
    const server = await start()
    await put(server, { key: 'seen', is_enabled: true })
    for (let i = 0; i < 14; i++) await put(server, { key: `heavy-${i}`, is_enabled: true, rules: heavyRules(`${i}`) })
    const stream = await openHeldSse(`${server.url}/stream`, { 'Last-Event-ID': '1' })
    held.push(stream)
    await put(server, { key: 'late-1', is_enabled: true })
    expect(server.runtime.hub.droppedCount).toBe(0)

    stream.read()
    await stream.waitFor((e) => e.data.includes('"late-1"'), 30_000)
    expect(stream.events[0]?.event).toBe('resumed')
    expect(stream.events.slice(1).map((e) => JSON.parse(e.data).flag.key)).toEqual([
      ...Array.from({ length: 14 }, (_, i) => `heavy-${i}`),
      'late-1',
    ])
  }, 60_000)
})
