import { TABLES } from '@flagsync/store'
import { DIALECTS } from '@flagsync/test-support/databases'
import { EventSource } from 'eventsource'
import { afterEach, describe, expect, it } from 'vitest'
import { type Json, startHarness } from '../harness.js'
import { createProject, flagsOf, putFlag } from './support.js'

interface Received {
  type: string
  id: string
  data: Json
}

/** An EventSource (the `eventsource` package: reconnects with Last-Event-ID as browsers do) recording every event. */
function follow(url: string) {
  const source = new EventSource(url)
  const received: Received[] = []
  for (const type of ['connected', 'resumed', 'update', 'ready']) {
    source.addEventListener(type, (e) => received.push({ type, id: e.lastEventId, data: JSON.parse(e.data) }))
  }
  const until = async (what: (events: Received[]) => boolean, timeout = 15_000) =>
    expect.poll(() => what(received), { timeout, interval: 50 }).toBe(true)
  return { source, received, until }
}

describe.each(DIALECTS)('/stream resumes across a service restart on %s', (dialect) => {
  const cleanup: Array<() => unknown> = []
  afterEach(async () => {
    for (const step of cleanup.splice(0).reverse()) await step()
  })

  it('an EventSource that reconnects to a restarted service gets resumed, only the missed changes of its environment, and ready', async () => {
    const first = await startHarness(dialect)
    cleanup.push(() => first.dispose())
    const p = await createProject(first)
    for (const key of ['a', 'b', 'c']) await putFlag(first, p.production, { key, is_enabled: true })
    await putFlag(first, p.staging, { key: 'staging-only', is_enabled: true })

    const stream = follow(`${first.url}/stream?sdk_key=${p.sdkKey}`)
    cleanup.push(() => stream.source.close())
    await stream.until((events) => events.some((e) => e.type === 'ready'))
    expect(stream.received.map((e) => [e.type, e.data.flag?.key])).toEqual([
      ['connected', undefined],
      ['update', 'a'],
      ['update', 'b'],
      ['update', 'c'],
      ['ready', undefined],
    ])
    const lastSeen = stream.received.at(-2)?.id as string
    const port = new URL(first.url).port
    await first.stop()

    // Another instance on the same database writes while the first is down: its Production flags and a Staging one.
    const second = await startHarness(dialect, { databaseUrl: first.databaseUrl, setup: false })
    cleanup.push(() => second.stop())
    const prod = flagsOf(second, p.production, first.admin)
    expect((await prod.patch('a', { description: 'while away' })).status).toBe(200)
    expect((await prod.delete('b')).status).toBe(204)
    expect((await prod.put({ key: 'd', is_enabled: false })).status).toBe(200)
    expect((await flagsOf(second, p.staging, first.admin).put({ key: 's2', is_enabled: true })).status).toBe(200)
    // The change log's revisions are the event ids, whichever instance serves them.
    const missed = (
      (await second.server.runtime
        .knex(TABLES.changes)
        .where('scope', p.production)
        .andWhere('revision', '>', Number(lastSeen))
        .orderBy('revision')
        .select('revision')) as Array<{ revision: number | string }>
    ).map((r) => String(r.revision))
    expect(missed).toHaveLength(3)
    await second.stop()

    // The service comes back on the same port: EventSource reconnects on its own, with Last-Event-ID.
    const before = stream.received.length
    const restarted = await startHarness(dialect, {
      databaseUrl: first.databaseUrl,
      setup: false,
      env: { PORT: port },
    })
    cleanup.push(() => restarted.stop())
    await stream.until((events) => events.slice(before).some((e) => e.type === 'ready'))
    const resumed = stream.received.slice(before)
    expect(resumed.map((e) => [e.type, e.id, e.data.type ?? e.data, e.data.flag?.key ?? e.data.key])).toEqual([
      ['resumed', lastSeen, { environment_id: p.production }, undefined],
      ['update', missed[0], 'UPSERT', 'a'],
      ['update', missed[1], 'DELETE', 'b'],
      ['update', missed[2], 'UPSERT', 'd'],
      ['ready', expect.any(String), '3', undefined], // ready carries no id
    ])
    expect(resumed[1]?.data.flag).toEqual((await flagsOf(restarted, p.production, first.admin).get('a')).body)

    // Live updates follow on the resumed stream, once each.
    expect((await flagsOf(restarted, p.production, first.admin).put({ key: 'live', is_enabled: true })).status).toBe(
      200,
    )
    await stream.until((events) => events.some((e) => e.data.flag?.key === 'live'))
    expect(stream.received.slice(before + resumed.length).map((e) => [e.type, e.data.flag?.key])).toEqual([
      ['update', 'live'],
    ])
  })
})
