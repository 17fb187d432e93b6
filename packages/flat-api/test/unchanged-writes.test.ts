import { DIALECTS } from '@flagsync/test-support/databases'
import { batch, insert, update } from '@flagsync/test-support/operations'
import { openSse, type SseReader } from '@flagsync/test-support/sse-reader'
import { startTestServer, type TestServer } from '@flagsync/test-support/test-server'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'

/** Long enough for a committed write's update to reach an open stream on a loaded machine. */
const QUIET_MS = 400

describe.each(DIALECTS)('flat API: a write that changes nothing on %s', (dialect) => {
  let server: TestServer
  let stream: SseReader
  beforeEach(async () => {
    server = await startTestServer({ dialect })
    const created = await server.request('/api/flags', {
      method: 'POST',
      body: { key: 'dark-mode', is_enabled: true, description: 'night', rules: [] },
    })
    expect(created.status).toBe(200)
    stream = await openSse(`${server.url}/stream`)
    await stream.waitForCount(2) // connected + the bootstrap update of dark-mode
  })
  afterEach(async () => {
    stream.close()
    await server.dispose()
  })

  const history = async () =>
    (await (await server.request('/api/flags/dark-mode/history')).json()) as { entries: unknown[] }
  const stored = async () => (await server.request('/api/flags/dark-mode')).json()

  /** Answers 200 with the stored flag at its unchanged revision, and records, streams, logs nothing. */
  async function expectNoOp(res: Response) {
    expect(res.status).toBe(200)
    const body = await res.json()
    expect(body).toEqual({
      key: 'dark-mode',
      is_enabled: true,
      description: 'night',
      rollout_percentage: null,
      rules: [],
      revision: 1,
    })
    expect(await stored()).toEqual(body)
    expect((await history()).entries).toHaveLength(1)
    await new Promise((r) => setTimeout(r, QUIET_MS))
    expect(stream.events).toHaveLength(2)
  }

  /** A real change after the no-op does arrive: the quiet stream above was listening. */
  async function expectRealChangeArrives() {
    const res = await server.request('/api/flags/dark-mode', { method: 'PATCH', body: { is_enabled: false } })
    expect((await res.json()).revision).toBe(2)
    const update = await stream.waitFor((e) => e.event === 'update', 5000, 2)
    expect(JSON.parse(update.data)).toMatchObject({ type: 'UPSERT', flag: { is_enabled: false, revision: 2 } })
    expect((await history()).entries).toHaveLength(2)
  }

  it('PATCH {} answers the flag at its current revision and records nothing', async () => {
    await expectNoOp(await server.request('/api/flags/dark-mode', { method: 'PATCH', body: {} }))
    await expectRealChangeArrives()
  })

  it('PATCH with the values the flag already has records nothing', async () => {
    await expectNoOp(
      await server.request('/api/flags/dark-mode', {
        method: 'PATCH',
        body: { is_enabled: true, description: 'night', rollout_percentage: null },
      }),
    )
    await expectRealChangeArrives()
  })

  it('POST of the flag as GET returned it (revision included, keys reordered) records nothing', async () => {
    const read = (await stored()) as Record<string, unknown>
    const reordered = Object.fromEntries(Object.entries(read).reverse())
    await expectNoOp(await server.request('/api/flags', { method: 'POST', body: reordered }))
    await expectRealChangeArrives()
  })

  it('a sync batch re-sending the current value is acked as applied and streams nothing', async () => {
    const read = (await stored()) as Record<string, unknown>
    const resend = batch([
      update('dark-mode', {}),
      update('dark-mode', { is_enabled: true, description: 'night' }),
      { ...insert('dark-mode', read), baseRevision: 1 },
    ])
    const res = await server.request('/sync', { method: 'POST', body: resend })
    expect(res.status).toBe(200)
    expect(await res.json()).toEqual({ batchId: resend.batchId, applied: 3 })
    expect((await history()).entries).toHaveLength(1)
    await new Promise((r) => setTimeout(r, QUIET_MS))
    expect(stream.events).toHaveLength(2)
    expect((await stored()).revision).toBe(1)
    await expectRealChangeArrives()
  })
})
