import { DIALECTS } from '@flagsync/test-support/databases'
import { afterEach, describe, expect, it } from 'vitest'
import { createProject, flagsOf, putFlag } from '../flags/support.js'
import { type Harness, MINUTE, startHarness, T0 } from '../harness.js'
import { POLL_MS, schedule, schedulesOf, settled } from './support.js'

describe.each(DIALECTS)('a service that was down at run_at on %s', (dialect) => {
  const harnesses: Harness[] = []
  afterEach(async () => {
    for (const h of harnesses.splice(0).reverse()) await h.dispose()
  })

  it('applies the schedule when it starts and records how late', async () => {
    const env = { SCHEDULE_POLL_MS: String(POLL_MS) }
    const first = await startHarness(dialect, { env })
    const p = await createProject(first)
    await putFlag(first, p.production, { key: 'late', is_enabled: false })
    const created = await schedule(first, p.production, 'late', { is_enabled: true }, MINUTE)
    await first.stop()

    // Back 10 minutes after run_at, on the same database.
    const second = await startHarness(dialect, { env, databaseUrl: first.databaseUrl, clockStart: T0 + 11 * MINUTE })
    harnesses.push(first, second)
    const done = await settled(second, p.production, created.id)
    expect(done).toMatchObject({ status: 'applied', result: { changed: true, late_ms: 10 * MINUTE } })
    expect(done.applied_at).toBe(new Date(T0 + 11 * MINUTE).toISOString())
    expect((await flagsOf(second, p.production).get('late')).body.is_enabled).toBe(true)
    expect((await schedulesOf(second, p.production).list('?status=pending')).body).toEqual([])
  })
})
