import { FlagStore, openDatabase } from '@flagsync/store'
import { DIALECTS } from '@flagsync/test-support/databases'
import { EventSource } from 'eventsource'
import { afterEach, describe, expect, it } from 'vitest'
import { type ReliabilityServer, startServer } from './harness.js'

const servers: ReliabilityServer[] = []
const sources: EventSource[] = []
afterEach(async () => {
  for (const s of sources.splice(0)) s.close()
  for (const s of servers.splice(0).reverse()) await s.dispose()
})

interface Connection {
  lastEventId: string | null
  bytes: number
  events: Array<{ type: string; id: string }>
}

/**
 * A document-2 client on the real `eventsource` package, written to the spec
 * alone: every `connected` clears its store, and it knows nothing of resuming
 * (it has no listener for `resumed`). The
 * fetch it is given records, per connection, the Last-Event-ID it sent and the
 * bytes it received.
 */
function follow(url: string) {
  const flags = new Map<string, unknown>()
  const connections: Connection[] = []
  const fetchCounting: typeof fetch = async (input, init) => {
    const headers = new Headers(init?.headers)
    const connection: Connection = { lastEventId: headers.get('last-event-id'), bytes: 0, events: [] }
    connections.push(connection)
    const res = await fetch(input, init)
    if (!res.body) return res
    const counted = res.body.pipeThrough(
      new TransformStream<Uint8Array, Uint8Array>({
        transform(chunk, controller) {
          connection.bytes += chunk.byteLength
          controller.enqueue(chunk)
        },
      }),
    )
    return new Response(counted, { status: res.status, statusText: res.statusText, headers: res.headers })
  }
  const source = new EventSource(`${url}/stream`, { fetch: fetchCounting })
  sources.push(source)
  source.addEventListener('connected', (e) => {
    connections.at(-1)?.events.push({ type: 'connected', id: e.lastEventId })
    flags.clear()
  })
  source.addEventListener('update', (e) => {
    connections.at(-1)?.events.push({ type: 'update', id: e.lastEventId })
    const update = JSON.parse(e.data) as { type: string; key?: string; flag?: { key: string } }
    if (update.type === 'UPSERT' && update.flag) flags.set(update.flag.key, update.flag)
    else if (update.key !== undefined) flags.delete(update.key)
  })
  return { flags, connections, source }
}

const post = (url: string, flag: Record<string, unknown>) =>
  fetch(`${url}/api/flags`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify(flag),
  })
const serverState = async (url: string) =>
  new Map(((await (await fetch(`${url}/api/flags`)).json()) as Array<{ key: string }>).map((f) => [f.key, f]))

describe.each(DIALECTS)('an eventsource client across a server restart on %s', (dialect) => {
  it('reconnects by itself with Last-Event-ID and gets only the changes made while the server was down', async () => {
    const env = { STREAM_RETRY_MS: '100' }
    const first = await startServer({ dialect, env })
    servers.push(first)
    const description = 'x'.repeat(400)
    for (let i = 0; i < 100; i++) await post(first.url, { key: `flag-${i}`, is_enabled: i % 2 === 0, description })
    const client = follow(first.url)
    await expect.poll(() => client.flags.size, { timeout: 5000 }).toBe(100)
    await post(first.url, { key: 'flag-0', is_enabled: false, description: 'live' })
    await expect.poll(() => (client.flags.get('flag-0') as { description: string }).description).toBe('live')
    const lastSeen = client.connections[0]?.events.at(-1)?.id
    expect(lastSeen).toBe('101')

    await first.stop()
    // Changed while no server runs: another process writes straight to the database.
    const db = await openDatabase(first.databaseUrl)
    try {
      await new FlagStore(db).write(async (w) => {
        w.put({ key: 'flag-1', is_enabled: true, rollout_percentage: 5, description: 'while down', rules: [] })
        w.put({ key: 'flag-new', is_enabled: true, rollout_percentage: null, description: null, rules: [] })
        await w.delete('flag-2')
      })
    } finally {
      await db.close()
    }
    await new Promise((resolve) => setTimeout(resolve, 300)) // the client fails a reconnect or two meanwhile

    const second = await startServer({ databaseUrl: first.databaseUrl, config: { port: first.port }, env })
    servers.push(second)
    expect(second.url).toBe(first.url)
    const expected = await serverState(second.url)
    await expect.poll(() => client.flags, { timeout: 10_000 }).toEqual(expected)

    const resumed = client.connections.find((c) => c.events.length > 0 && c !== client.connections[0])
    expect(resumed?.lastEventId).toBe('101')
    // No connected (which would have cleared the store): only the three missed changes.
    expect(resumed?.events).toEqual([
      { type: 'update', id: '102' },
      { type: 'update', id: '103' },
      { type: 'update', id: '104' },
    ])
    const bootstrapBytes = client.connections[0]?.bytes ?? 0
    expect(resumed?.bytes).toBeLessThan(bootstrapBytes / 20)

    // And it keeps following the restarted server.
    await post(second.url, { key: 'after', is_enabled: true })
    await expect.poll(() => client.flags.has('after'), { timeout: 5000 }).toBe(true)
    expect(client.flags).toEqual(await serverState(second.url))
  })
})
