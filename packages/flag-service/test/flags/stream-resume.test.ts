import { META, TABLES } from '@flagsync/store'
import { DIALECTS } from '@flagsync/test-support/databases'
import type { SseReader } from '@flagsync/test-support/sse-reader'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { type Harness, type Json, startHarness } from '../harness.js'
import { createProject, flagsOf, keyHeader, openStream, putFlag } from './support.js'

type Event = { event?: string; id?: string; data: string }

/** What a client holds after these events: `connected` starts over, `resumed` keeps the state. */
function apply(state: Map<string, Json>, events: readonly Event[]): Map<string, Json> {
  for (const e of events) {
    if (e.event === 'connected') state.clear()
    if (e.event !== 'update') continue
    const update = JSON.parse(e.data)
    const key = `${update.env_id}/${update.flag?.key ?? update.key}`
    if (update.type === 'UPSERT') state.set(key, update.flag)
    else state.delete(key)
  }
  return state
}

describe.each(DIALECTS)('/stream Last-Event-ID resume on %s', (dialect) => {
  let h: Harness
  const readers: SseReader[] = []
  const open = async (headers: Record<string, string>, query = '') => {
    const reader = await openStream(h, headers, query)
    readers.push(reader)
    expect(reader.status).toBe(200)
    return reader
  }
  /** The stream's events through its `ready`. */
  const untilReady = async (reader: SseReader) => {
    await reader.waitFor((e) => e.event === 'ready')
    return [...reader.events]
  }
  const session = () => ({ Cookie: (h.admin as { cookie: string }).cookie })
  const segment = (projectId: string, body: Json, method = 'POST', key = '') =>
    h.call(`/api/projects/${projectId}/segments${key}`, { method, as: h.admin, body })
  /** An environment's flags as the snapshot serves them, keyed like `apply`'s state. */
  const current = async (sdkKey: string, environmentId: string) =>
    new Map(
      ((await h.call('/flags/snapshot', { headers: keyHeader(sdkKey) })).body as Json[]).map((f) => [
        `${environmentId}/${f.key}`,
        f,
      ]),
    )
  beforeAll(async () => {
    h = await startHarness(dialect)
  })
  afterEach(() => {
    for (const r of readers.splice(0)) r.close()
  })
  afterAll(async () => {
    await h?.dispose()
  })

  it('a client cut off anywhere in its bootstrap or later resumes into exactly the current flags, segments expanded', async () => {
    const p = await createProject(h)
    await segment(p.id, {
      key: 'beta',
      name: 'Beta',
      rules: [{ attribute: 'plan', operator: 'equals', values: ['b'] }],
    })
    for (let i = 0; i < 6; i++) await putFlag(h, p.production, { key: `f${i}`, is_enabled: true })
    await putFlag(h, p.production, {
      key: 'uses-beta',
      is_enabled: true,
      rules: [{ segment_key: 'beta', variant: true }],
    })
    await flagsOf(h, p.production).patch('f0', { description: 'last written' })
    const boot = await untilReady(await open(keyHeader(p.sdkKey)))
    expect(boot[0]).toMatchObject({ event: 'connected', id: '' })
    const ids = boot.slice(1, -1).map((e) => Number(e.id))
    expect(ids).toEqual([...ids].sort((a, b) => a - b)) // revision order: every id is a resume point

    await flagsOf(h, p.production).patch('f2', { rollout_percentage: 20 })
    await flagsOf(h, p.production).delete('f4')
    await segment(p.id, { rules: [{ attribute: 'plan', operator: 'equals', values: ['c'] }] }, 'PATCH', '/beta')
    await putFlag(h, p.production, { key: 'new', is_enabled: false })
    await putFlag(h, p.staging, { key: 'staging-only', is_enabled: true })
    const now = await current(p.sdkKey, p.production)
    for (let cut = 1; cut < boot.length - 1; cut++) {
      const held = boot.slice(0, cut + 1)
      const resumed = await untilReady(await open({ ...keyHeader(p.sdkKey), 'Last-Event-ID': held.at(-1)?.id ?? '' }))
      expect(resumed[0], `cut after ${cut}`).toMatchObject({ event: 'resumed', id: held.at(-1)?.id })
      expect(resumed.some((e) => e.event === 'connected')).toBe(false)
      expect(apply(apply(new Map(), held), resumed), `cut after ${cut}`).toEqual(now)
    }
    // A client that saw the whole bootstrap gets each touched flag once: f2, f4's delete, uses-beta, new.
    const last = boot.at(-2)?.id as string
    const resumed = await untilReady(await open({ ...keyHeader(p.sdkKey), 'Last-Event-ID': last }))
    const updates = resumed.slice(1, -1).map((e) => JSON.parse(e.data))
    expect(updates.map((u) => [u.type, u.flag?.key ?? u.key])).toEqual([
      ['UPSERT', 'f2'],
      ['DELETE', 'f4'],
      ['UPSERT', 'uses-beta'],
      ['UPSERT', 'new'],
    ])
    expect(updates[2].flag.rules[0].values).toEqual(['c']) // expanded with the segment as it is now
    expect(JSON.parse(resumed.at(-1)?.data ?? '')).toBe('4')
  })

  it('answers the full bootstrap for an id that is unparsable, above the store revision, or older than the pruned log', async () => {
    const p = await createProject(h)
    for (const key of ['a', 'b']) await putFlag(h, p.production, { key, is_enabled: true })
    const boot = await untilReady(await open(keyHeader(p.sdkKey)))
    expect(boot).toHaveLength(4)
    for (const id of ['abc', '-1', '99999999', String(Number.MAX_SAFE_INTEGER)]) {
      const events = await untilReady(await open({ ...keyHeader(p.sdkKey), 'Last-Event-ID': id }))
      expect(
        events.map((e) => [e.event, e.id]),
        id,
      ).toEqual(boot.map((e) => [e.event, e.id]))
    }
    const first = boot[1]?.id as string
    await putFlag(h, p.production, { key: 'c', is_enabled: true })
    // The log no longer covers what follows the first flag: pruned past it.
    const knex = h.server.runtime.knex
    const before = await knex(TABLES.meta).where('name', META.prunedThrough).first('value')
    await knex(TABLES.meta)
      .where('name', META.prunedThrough)
      .update({ value: Number(first) + 1 })
    try {
      const events = await untilReady(await open({ ...keyHeader(p.sdkKey), 'Last-Event-ID': first }))
      expect(events.map((e) => [e.event, JSON.parse(e.data).flag?.key])).toEqual([
        ['connected', undefined],
        ['update', 'a'],
        ['update', 'b'],
        ['update', 'c'],
        ['ready', undefined],
      ])
    } finally {
      await knex(TABLES.meta)
        .where('name', META.prunedThrough)
        .update({ value: before?.value ?? 0 })
    }
  })

  it('a dashboard stream that named its environments resumes with their updates and reorders; one following everything starts over', async () => {
    const p = await createProject(h)
    await putFlag(h, p.production, { key: 'p1', is_enabled: true })
    await putFlag(h, p.staging, { key: 's1', is_enabled: true })
    const query = `?environment_id=${p.production},${p.staging}`
    const boot = await untilReady(await open(session(), query))
    expect(boot.map((e) => e.event)).toEqual(['connected', 'update', 'update', 'ready'])
    const last = boot.at(-2)?.id as string

    await putFlag(h, p.staging, { key: 's2', is_enabled: true })
    await flagsOf(h, p.production).delete('p1')
    await putFlag(h, p.development, { key: 'not-followed', is_enabled: true })
    const order = [p.development, p.staging, p.production]
    const reordered = await h.call(`/api/projects/${p.id}/environments/order`, {
      method: 'PUT',
      as: h.admin,
      body: { environment_ids: order },
    })
    expect(reordered.status).toBe(200)

    const resumed = await untilReady(await open({ ...session(), 'Last-Event-ID': last }, query))
    expect(resumed.map((e) => [e.event, JSON.parse(e.data)])).toEqual([
      ['resumed', { environment_id: null }],
      ['update', expect.objectContaining({ type: 'UPSERT', env_id: p.staging })],
      ['update', { type: 'DELETE', env_id: p.production, key: 'p1' }],
      ['environments', { project_id: p.id, environment_ids: order }],
      ['ready', '2'],
    ])

    const everything = await untilReady(await open({ ...session(), 'Last-Event-ID': last }))
    expect(everything[0]?.event).toBe('connected')
  })
})
