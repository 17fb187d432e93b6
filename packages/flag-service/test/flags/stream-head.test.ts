import type { SseReader } from '@flagsync/test-support/sse-reader'
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest'
import { flagStreamsOf } from '../../src/flags/index.js'
import { type Harness, headersFor, startHarness } from '../harness.js'
import { createProject, keyHeader, openStream, type Project, putFlag } from './support.js'

/**
 * HEAD /stream: Express answers HEAD with the GET handler, which would open
 * a stream a HEAD can never read, holding the connection open without
 * answering and taking a slot of STREAM_MAX_CONNECTIONS. HEAD gets a GET's
 * status and headers at once, with no body, and never counts.
 */
describe.each(['sqlite', 'postgres'] as const)('HEAD /stream on %s', (dialect) => {
  let h: Harness
  let p: Project
  const readers: SseReader[] = []
  beforeAll(async () => {
    h = await startHarness(dialect, { env: { STREAM_MAX_CONNECTIONS: '2' } })
    p = await createProject(h)
    await putFlag(h, p.production, { key: 'on', is_enabled: true })
  })
  afterEach(() => {
    for (const r of readers.splice(0)) r.close()
  })
  afterAll(async () => {
    await h?.dispose()
  })

  const head = async (headers: Record<string, string>, query = '') => {
    const res = await fetch(`${h.url}/stream${query}`, { method: 'HEAD', headers, signal: AbortSignal.timeout(3000) })
    return { status: res.status, type: res.headers.get('content-type'), body: await res.text() }
  }

  it('answers at once with the stream headers and no body, and two in flight take no slot of a cap of 2', async () => {
    const engine = flagStreamsOf(h.server.runtime)
    const opened = [vi.spyOn(engine, 'openEnvironmentStream'), vi.spyOn(engine, 'openDashboardStream')]
    const heads = await Promise.all([
      head(keyHeader(p.sdkKey)),
      head(headersFor(h.admin)),
      head(keyHeader(p.sdkKey), `?sdk_key=${p.sdkKey}`),
    ])
    for (const r of heads) expect(r).toEqual({ status: 200, type: 'text/event-stream; charset=utf-8', body: '' })
    const hub = engine.hub
    expect(hub.size()).toBe(0)
    // No stream was set up only to be dropped (bootstrap, access checks, follows).
    for (const spy of opened) {
      expect(spy).not.toHaveBeenCalled()
      spy.mockRestore()
    }

    // Both slots are still free: two GETs stream, and the cap still holds for a third.
    for (const headers of [keyHeader(p.sdkKey), headersFor(h.admin)]) {
      const reader = await openStream(h, headers)
      readers.push(reader)
      expect(reader.status).toBe(200)
      await reader.waitFor((e) => e.event === 'ready')
    }
    expect(hub.size()).toBe(2)
    expect((await h.call('/stream', { headers: keyHeader(p.sdkKey) })).status).toBe(503)
    // And a HEAD while full answers as the GET would.
    expect((await head(keyHeader(p.sdkKey))).status).toBe(503)
  })

  it('authenticates as a GET does: 401 without or with a bad key, 404 for an environment the caller cannot see', async () => {
    expect((await head({})).status).toBe(401)
    expect((await head(keyHeader('sk_live_nope'))).status).toBe(401)
    const missing = '00000000-0000-4000-8000-000000000000'
    expect((await head(headersFor(h.admin), `?environment_id=${missing}`)).status).toBe(404)
  })

  it('leaves nothing behind: a change after many HEADs reaches the one GET, and no HEAD is followed', async () => {
    await Promise.all(Array.from({ length: 20 }, (_, i) => head(i % 2 ? headersFor(h.admin) : keyHeader(p.sdkKey))))
    const reader = await openStream(h, keyHeader(p.sdkKey))
    readers.push(reader)
    await reader.waitFor((e) => e.event === 'ready')
    await putFlag(h, p.production, { key: 'after-heads', is_enabled: true })
    await reader.waitFor((e) => e.data.includes('after-heads'))
    expect(flagStreamsOf(h.server.runtime).hub.size()).toBe(1)
  })
})
