import { DIALECTS } from '@flagsync/test-support/databases'
import { type HeldSse, openHeldSse } from '@flagsync/test-support/held-sse'
import type { SseReader } from '@flagsync/test-support/sse-reader'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { flagStreamsOf } from '../../src/flags/index.js'
import { type Harness, headersFor, type Json, startHarness } from '../harness.js'
import {
  bootstrapOf,
  createProject,
  flagsOf,
  keyHeader,
  openStream,
  type Project,
  putFlag,
  sdkKeyFor,
} from './support.js'

const MiB = 1024 * 1024
/** 110 flags of 10 000-character descriptions: a production environment of about 1.1 MB. */
const WIDE_FLAGS = 110
/**
 * 14 flags of ~900 KB of rule values each: a staging environment of about
 * 12.6 MB, more than the kernel's socket buffers hold on loopback, so a
 * client that does not read leaves most of it queued on the server.
 */
const HEAVY_FLAGS = 14
const heavyRules = (tag: string) =>
  Array.from({ length: 9 }, (_, r) => ({
    attribute: `id${r}`,
    operator: 'equals',
    values: Array.from({ length: 100 }, (_, i) => `${tag}-${r}-${i}-`.padEnd(1000, 'x')),
  }))
const HEAVY_BYTES = JSON.stringify(heavyRules('0')).length

/**
 * STREAM_MAX_BUFFER_BYTES (default 1 MiB) bounds what piles up behind a
 * subscriber's bootstrap, not the bootstrap itself: every stream gets its
 * environments whole, however large, and one that stops reading is still
 * dropped once later writes queued behind it pass the cap.
 */
describe.each(DIALECTS)('/stream of environments larger than STREAM_MAX_BUFFER_BYTES on %s', (dialect) => {
  let h: Harness
  let p: Project
  let token: string
  const readers: Array<SseReader | HeldSse> = []
  const hub = () => flagStreamsOf(h.server.runtime).hub

  beforeAll(async () => {
    h = await startHarness(dialect)
    p = await createProject(h)
    for (let i = 0; i < WIDE_FLAGS; i++) {
      await putFlag(h, p.production, { key: `wide-${i}`, is_enabled: true, description: `${i}`.padEnd(10_000, 'd') })
    }
    for (let i = 0; i < HEAVY_FLAGS; i++) {
      await putFlag(h, p.staging, { key: `heavy-${i}`, is_enabled: true, rules: heavyRules(`${i}`) })
    }
    token = await h.createToken(h.admin, 'read_only')
  }, 120_000)
  afterEach(() => {
    for (const r of readers.splice(0)) r.close()
  })
  afterAll(async () => {
    await h?.dispose()
  })

  /** The three ways to follow an environment: a dashboard session, a personal access token and an SDK key. */
  const callers = (environmentId: string, sdkKey: string) => ({
    session: { headers: headersFor(h.admin), query: '' }, // a workspace admin's default stream: every project
    token: { headers: { Authorization: `Bearer ${token}` }, query: `?environment_id=${environmentId}` },
    sdk: { headers: keyHeader(sdkKey), query: '' },
  })

  it('session, token and SDK-key streams get connected, every flag of a 1.1 MB environment and ready, then live updates', async () => {
    const size = flagStreamsOf(h.server.runtime).snapshot(p.production, p.id).body.length
    expect(size).toBeGreaterThan(MiB)
    const streams: Record<string, SseReader> = {}
    for (const [name, { headers, query }] of Object.entries(callers(p.production, p.sdkKey))) {
      const reader = await openStream(h, headers, query)
      readers.push(reader)
      expect(reader.status, name).toBe(200)
      streams[name] = reader
    }
    const wide = Array.from({ length: WIDE_FLAGS }, (_, i) => `wide-${i}`).sort()
    for (const [name, reader] of Object.entries(streams)) {
      const boot = await bootstrapOf(reader)
      const production = boot.flags.filter((u: Json) => u.env_id === p.production)
      expect(production.map((u: Json) => u.flag.key).sort(), name).toEqual(wide)
      expect(
        production.every((u: Json) => u.flag.description.length === 10_000),
        name,
      ).toBe(true)
      expect(boot.ready, name).toBe(String(boot.flags.length))
    }

    const live = Object.fromEntries(Object.entries(streams).map(([name, reader]) => [name, reader.events.length]))
    await flagsOf(h, p.production).patch('wide-7', { is_enabled: false })
    for (const [name, reader] of Object.entries(streams)) {
      const update = await reader.waitFor((e) => e.data.includes('"wide-7"'), 5000, live[name])
      expect(JSON.parse(update.data).flag.is_enabled, name).toBe(false)
    }
    expect(hub().droppedCount).toBe(0)
  }, 60_000)

  it('a stream whose client reads only after live updates were queued behind its 12 MB bootstrap gets all of it', async () => {
    const sdkKey = await sdkKeyFor(h, p.id, p.staging)
    const held: Record<string, HeldSse> = {}
    for (const [name, { headers, query }] of Object.entries(callers(p.staging, sdkKey))) {
      const stream = await openHeldSse(`${h.url}/stream${query}`, headers)
      readers.push(stream)
      expect(stream.status, name).toBe(200)
      held[name] = stream
    }
    // Written while every bootstrap is still queued unsent on the server.
    await flagsOf(h, p.staging).patch('heavy-3', { is_enabled: false })
    await flagsOf(h, p.staging).patch('heavy-4', { rules: heavyRules('changed') })
    expect(hub().droppedCount).toBe(0)

    for (const [name, stream] of Object.entries(held)) {
      stream.read()
      await stream.waitFor(
        (e) => e.event === 'update' && e.data.includes('"heavy-4"') && e.data.includes('changed-0'),
        30_000,
      )
      const names = stream.events.map((e) => e.event)
      const readyAt = names.indexOf('ready')
      expect(names[0], name).toBe('connected')
      const staging = stream.events
        .slice(1, readyAt)
        .map((e) => JSON.parse(e.data))
        .filter((u: Json) => u.env_id === p.staging)
      expect(staging.map((u: Json) => u.flag.key).sort(), name).toEqual(
        Array.from({ length: HEAVY_FLAGS }, (_, i) => `heavy-${i}`).sort(),
      )
      const live = stream.events.slice(readyAt + 1).map((e) => JSON.parse(e.data).flag)
      expect(
        live.map((f: Json) => f.key),
        name,
      ).toEqual(['heavy-3', 'heavy-4'])
      expect(live[0].is_enabled, name).toBe(false)
    }
    expect(hub().droppedCount).toBe(0)
  }, 60_000)

  it('a session stream that never reads is dropped once the updates queued behind its bootstrap pass the cap', async () => {
    const reading = await openStream(h, headersFor(h.admin), `?environment_id=${p.staging}`)
    readers.push(reading)
    await bootstrapOf(reading)
    const stalled = await openHeldSse(`${h.url}/stream?environment_id=${p.staging}`, headersFor(h.admin))
    readers.push(stalled)
    expect(stalled.status).toBe(200)
    await expect.poll(() => hub().size()).toBe(2) // the previous tests' streams are gone
    const droppedBefore = hub().droppedCount

    // Each write sends ~900 KB to both streams; the reading one keeps up, the stalled one piles up.
    let writes = 0
    while (hub().droppedCount === droppedBefore) {
      if (writes >= 50) throw new Error(`not dropped after ${writes} writes of ~900 KB`)
      await flagsOf(h, p.staging).patch(`heavy-${writes % HEAVY_FLAGS}`, { rules: heavyRules(`w${writes}`) })
      writes++
    }
    // Dropped for what queued after its bootstrap: more than 1 MiB of updates had to be written first.
    expect(writes * HEAVY_BYTES).toBeGreaterThan(MiB)
    expect(hub().droppedCount).toBe(droppedBefore + 1)
    expect(hub().size()).toBe(1)
    stalled.read()
    await stalled.ended

    // The reading stream got every update, the last one included.
    await reading.waitFor((e) => e.event === 'update' && e.data.includes(`w${writes - 1}-0-0-`), 20_000)
  }, 60_000)
})
