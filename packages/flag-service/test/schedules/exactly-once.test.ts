import { createTestDatabase, type TestDatabase } from '@flagsync/test-support/databases'
import type { SpawnedServer } from '@flagsync/test-support/spawn-server'
import { afterEach, describe, expect, it } from 'vitest'
import {
  adminOf,
  insertSchedules,
  percentile,
  seedEnvironments,
  startService,
  type Tally,
  untilSettled,
} from './instances.js'

/**
 * Two service processes on one PostgreSQL database, 1 000 schedules due within the same second: each is applied
 * exactly once (one change-log row per schedule), also when one process is killed with SIGKILL mid-run.
 */
const COUNT = 1000

describe('schedules across two service processes on PostgreSQL', () => {
  const children: SpawnedServer[] = []
  const databases: TestDatabase[] = []
  afterEach(async () => {
    for (const c of children.splice(0)) c.kill()
    for (const d of databases.splice(0)) await d.drop()
  })

  /** Two processes, COUNT flags and COUNT schedules due within one second from `runAt`. */
  async function setUp() {
    const db = await createTestDatabase('postgres')
    databases.push(db)
    const a = await startService(db.url)
    children.push(a)
    const b = await startService(db.url)
    children.push(b)
    const call = await adminOf(a.url)
    const envs = await seedEnvironments(call, a.url, 10, COUNT / 10)
    const runAt = Math.ceil((Date.now() + 2000) / 1000) * 1000
    expect(await insertSchedules(db.url, envs, runAt)).toBe(COUNT)
    expect(Date.now(), 'the schedules were in place before they were due').toBeLessThan(runAt)
    return { db, a, b, runAt }
  }

  function expectExactlyOnce(t: Tally) {
    expect(t.byStatus).toEqual({ applied: COUNT })
    expect(t.changesPerSchedule.size).toBe(COUNT)
    expect([...t.changesPerSchedule.values()].filter((n) => n !== 1)).toEqual([])
    expect(t.scheduleChanges).toBe(COUNT)
    expect(t.eventsPerSchedule.size).toBe(COUNT)
    expect([...t.eventsPerSchedule.values()].filter((n) => n !== 1)).toEqual([])
  }

  it('applies each of 1 000 schedules due in the same second exactly once', { timeout: 120_000 }, async () => {
    const { db, runAt } = await setUp()
    await new Promise((r) => setTimeout(r, Math.max(0, runAt - Date.now())))
    const t = await untilSettled(db.url, 60_000)
    expectExactlyOnce(t)
    console.log(
      `1 000 schedules on two instances: lateness p50 ${percentile(t.lateMs, 50)} ms, p99 ${percentile(t.lateMs, 99)} ms`,
    )
  })

  it('loses none and doubles none when one process is killed mid-run', { timeout: 120_000 }, async () => {
    const { db, a, runAt } = await setUp()
    await new Promise((r) => setTimeout(r, Math.max(0, runAt - Date.now())))
    let killedAt: number | undefined
    const t = await untilSettled(db.url, 60_000, (byStatus) => {
      if (killedAt === undefined && (byStatus.applied ?? 0) >= COUNT / 5) {
        killedAt = byStatus.applied
        a.kill('SIGKILL')
      }
    })
    expect(await a.exited).toBe('SIGKILL')
    expect(killedAt, 'killed while schedules were still pending').toBeLessThan(COUNT)
    expectExactlyOnce(t)
  })
})
