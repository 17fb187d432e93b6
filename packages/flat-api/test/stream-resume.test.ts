import { openDatabase } from '@flagsync/store'
import { DIALECTS } from '@flagsync/test-support/databases'
import { openSse, type SseReader } from '@flagsync/test-support/sse-reader'
import { streamServers } from '@flagsync/test-support/stream-servers'
import type { TestServer } from '@flagsync/test-support/test-server'
import { describe, expect, it } from 'vitest'

/** Applies what a resuming client receives: a `connected` with an empty id starts over, with an id keeps the store. */
function apply(store: Map<string, unknown>, events: readonly { event?: string; id?: string; data: string }[]) {
  for (const e of events) {
    if (e.event === 'connected') {
      if (!e.id) store.clear()
      continue
    }
    const update = JSON.parse(e.data) as { type: string; key?: string; flag?: { key: string } }
    if (update.type === 'UPSERT' && update.flag) store.set(update.flag.key, update.flag)
    else if (update.key !== undefined) store.delete(update.key)
  }
  return store
}

describe.each(DIALECTS)('stream resume with Last-Event-ID on %s', (dialect) => {
  const servers = streamServers(dialect)
  const { start, readers } = servers
  const subscribe = (server: TestServer, lastEventId?: string) =>
    servers.subscribe(server, lastEventId === undefined ? {} : { 'Last-Event-ID': lastEventId })
  const put = (server: TestServer, key: string, description: string) =>
    server.request('/api/flags', { method: 'POST', body: { key, is_enabled: true, description } })
  const current = async (server: TestServer) =>
    new Map(((await (await server.request('/api/flags')).json()) as Array<{ key: string }>).map((f) => [f.key, f]))
  /** The events of the first connection's bootstrap: up to the end-marker comment. */
  const bootstrapOf = async (reader: SseReader) => {
    await expect.poll(() => reader.raw().includes(': bootstrap complete'), { timeout: 5000 }).toBe(true)
    return [...reader.events]
  }

  it('gives bootstrap updates their revision as id, in revision order, after a connected that clears the id', async () => {
    const server = await start()
    for (const key of ['c', 'a', 'b']) await put(server, key, 'v1')
    await put(server, 'a', 'v2') // a moves to the end: revision 4
    const stream = await subscribe(server)
    const boot = await bootstrapOf(stream)
    expect(boot[0]).toMatchObject({ event: 'connected', data: 'true', id: '' })
    expect(boot.slice(1).map((e) => [JSON.parse(e.data).flag.key, e.id])).toEqual([
      ['c', '1'],
      ['b', '3'],
      ['a', '4'],
    ])
    expect(stream.raw()).toMatch(/^retry: \d+\n\n/)
  })

  it('sends resumed (not connected) and only the missed updates and deletes to a client that resumes', async () => {
    const server = await start()
    for (let i = 0; i < 20; i++) await put(server, `f${i}`, 'v1')
    const first = await subscribe(server)
    const boot = await bootstrapOf(first)
    const lastSeen = boot.at(-1)?.id as string
    first.close()

    await put(server, 'f3', 'v2')
    await server.request('/api/flags/f7', { method: 'DELETE' })
    await put(server, 'new', 'v1')

    const resumed = await subscribe(server, lastSeen)
    await expect.poll(() => resumed.raw().includes(': bootstrap complete'), { timeout: 5000 }).toBe(true)
    const events = resumed.events
    expect(events[0]).toMatchObject({ event: 'resumed', data: 'true', id: lastSeen })
    expect(events.filter((e) => e.event === 'connected')).toEqual([])
    expect(events.slice(1).map((e) => [e.id, JSON.parse(e.data)])).toEqual([
      ['21', { type: 'UPSERT', flag: expect.objectContaining({ key: 'f3', description: 'v2' }) }],
      ['22', { type: 'DELETE', key: 'f7' }],
      ['23', { type: 'UPSERT', flag: expect.objectContaining({ key: 'new' }) }],
    ])
    expect(apply(apply(new Map(), boot), events)).toEqual(await current(server))

    // Live updates follow, with nothing lost or doubled.
    await put(server, 'f0', 'live')
    const live = await resumed.waitFor((e) => e.data.includes('"live"'))
    expect(live.id).toBe('24')
    expect(resumed.events).toHaveLength(5)

    // Nothing missed: resumed alone.
    const upToDate = await subscribe(server, '24')
    await expect.poll(() => upToDate.raw().includes(': bootstrap complete'), { timeout: 5000 }).toBe(true)
    expect(upToDate.events).toEqual([expect.objectContaining({ event: 'resumed', id: '24' })])
  })

  it('a client cut off anywhere in its bootstrap resumes from its last id into exactly the server state', async () => {
    const server = await start()
    for (let i = 0; i < 12; i++) await put(server, `k${(i * 7) % 12}`, `v${i}`)
    for (let i = 0; i < 12; i += 3) await put(server, `k${i}`, 'again')
    const stream = await subscribe(server)
    const boot = await bootstrapOf(stream)
    stream.close()
    await server.request('/api/flags/k5', { method: 'DELETE' })
    await put(server, 'k1', 'after')
    const expected = await current(server)
    const latest = Number(boot.at(-1)?.id) + 2
    let resumes = 0
    for (let cut = 1; cut < boot.length; cut++) {
      const received = boot.slice(0, cut + 1)
      const id = received.at(-1)?.id as string
      const resumed = await subscribe(server, id)
      await expect.poll(() => resumed.raw().includes(': bootstrap complete'), { timeout: 5000 }).toBe(true)
      // Missing more changes than there are flags, a full bootstrap is the smaller answer.
      const missed = latest - Number(id)
      expect(resumed.events[0]?.id, `cut after ${cut}`).toBe(missed <= expected.size ? id : '')
      if (resumed.events[0]?.id === id) resumes++
      expect(apply(apply(new Map(), received), resumed.events), `cut after ${cut}`).toEqual(expected)
      resumed.close()
    }
    expect(resumes).toBeGreaterThan(5)
  })

  it('sends a full bootstrap for an id that is unparsable, from the future, or older than the kept log', async () => {
    const server = await start()
    for (let i = 0; i < 10; i++) await put(server, `f${i}`, 'v1')
    for (const id of ['abc', '-1', '1.5', '999', String(Number.MAX_SAFE_INTEGER)]) {
      const stream = await subscribe(server, id)
      const events = await bootstrapOf(stream)
      expect(events[0], id).toMatchObject({ event: 'connected', id: '' })
      expect(events, id).toHaveLength(11)
      stream.close()
    }
    // Prune the log below revision 6: a client at 3 can no longer be caught up from it.
    const db = await openDatabase(server.databaseUrl)
    try {
      await db.knex('flagsync_changes').where('revision', '<', 6).delete()
    } finally {
      await db.close()
    }
    const old = await subscribe(server, '3')
    expect(await bootstrapOf(old)).toHaveLength(11)
    expect(old.events[0]?.id).toBe('')
    const kept = await subscribe(server, '5')
    await expect.poll(() => kept.raw().includes(': bootstrap complete'), { timeout: 5000 }).toBe(true)
    expect(kept.events.map((e) => e.id)).toEqual(['5', '6', '7', '8', '9', '10'])
  })

  it('answers 503 with Retry-After and a JSON error past STREAM_MAX_CONNECTIONS, also for parallel connects', async () => {
    const server = await start({ env: { STREAM_MAX_CONNECTIONS: '4' } })
    await put(server, 'a', 'v1')
    const attempts = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        // Half of them resume, so both the fast path and the Express route race for the places.
        openSse(`${server.url}/stream`, i % 2 === 0 ? { 'Last-Event-ID': '1' } : {}),
      ),
    )
    readers.push(...attempts)
    const ok = attempts.filter((a) => a.status === 200)
    expect(ok).toHaveLength(4)
    expect(server.runtime.hub.size()).toBe(4)
    const refused = await fetch(`${server.url}/stream`)
    expect(refused.status).toBe(503)
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0)
    expect(await refused.json()).toEqual({ error: expect.stringMatching(/too many open streams/), code: 'unavailable' })
    for (const a of ok) a.close()
    await expect.poll(() => server.runtime.hub.size(), { timeout: 2000 }).toBe(0)
    expect((await subscribe(server)).status).toBe(200)
  })
})
