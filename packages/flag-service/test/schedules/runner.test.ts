import { createTestDatabase, DIALECTS, type TestDatabase } from '@flagsync/test-support/databases'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { openServiceRuntime } from '../../src/open-service-runtime.js'
import { ScheduleRunner, type Timers } from '../../src/schedules/runner.js'
import { SCHEDULES_TABLE } from '../../src/schedules/tables.js'
import type { ServiceRuntime } from '../../src/service-runtime.js'
import { ensureWorkspace } from '../../src/setup.js'
import { T0 } from '../harness.js'

/** Timers that record what the runner arms and fire only when the test says. */
function manualTimers() {
  const armed: Array<{ ms: number; fn: () => void; cleared: boolean }> = []
  const timers: Timers = {
    setTimeout: (fn, ms) => {
      const timer = { ms, fn, cleared: false }
      armed.push(timer)
      return timer
    },
    clearTimeout: (handle) => {
      ;(handle as { cleared: boolean }).cleared = true
    },
  }
  /** The live timer, once the runner armed one after `count` timers. */
  const next = async (count: number) => {
    await vi.waitFor(() => expect(armed.length).toBeGreaterThan(count), { timeout: 5000, interval: 5 })
    return armed[armed.length - 1] as (typeof armed)[number]
  }
  return { timers, armed, next }
}

/** The workspace admin's user id: a schedule's creator must still be allowed to write flags when it runs. */
const adminId = async (runtime: ServiceRuntime) =>
  Number(((await runtime.knex('flagsync_users').first('id')) as { id: number | string }).id)

describe.each(DIALECTS)('the schedule runner on %s', (dialect) => {
  let db: TestDatabase
  let runtime: ServiceRuntime
  afterEach(async () => {
    await runtime?.close()
    await db?.drop()
  })

  it('sleeps until the next due run_at, at most the poll, and applies what is due when it wakes', async () => {
    db = await createTestDatabase(dialect)
    const clock = { now: T0 }
    runtime = await openServiceRuntime({ databaseUrl: db.url, clock: () => clock.now })
    await ensureWorkspace(runtime, {
      adminEmail: 'ann@example.com',
      adminPassword: 'password-123',
      workspaceName: 'Acme',
      adminName: 'Ann',
    })
    const env = (await runtime.knex('flagsync_environments').first('id')) as { id: string }
    await runtime.write(async (_trx, flags) => flags.put({ key: 'launch', is_enabled: false }, env.id))
    const { timers, armed, next } = manualTimers()
    const runner = new ScheduleRunner(runtime, { pollMs: 60_000, timers })
    runtime.onClose(() => runner.close())

    runner.nudge()
    expect(armed.map((t) => t.ms)).toEqual([0])
    ;(await next(-1)).fn()
    expect((await next(1)).ms).toBe(60_000) // nothing scheduled: the poll

    await runtime.knex(SCHEDULES_TABLE).insert({
      environment_id: env.id,
      flag_key: 'launch',
      patch: '{"is_enabled":true}',
      run_at: T0 + 5000,
      status: 'pending',
      created_by: 'ann@example.com',
      created_by_actor: 'ann@example.com',
      created_by_user_id: await adminId(runtime),
      created_at: T0,
    })
    runner.nudge()
    expect(armed[1]?.cleared).toBe(true)
    ;(await next(2)).fn()
    expect((await next(3)).ms).toBe(5000) // wakes at run_at, not at the next poll

    clock.now = T0 + 5000
    ;(await next(3)).fn()
    expect((await next(4)).ms).toBe(60_000)
    const row = await runtime.knex(SCHEDULES_TABLE).first('status', 'result')
    expect(row).toMatchObject({ status: 'applied' })
    expect(JSON.parse(row.result)).toEqual({ changed: true, late_ms: 0 })
  })

  it('leaves a batch that fails pending for the next poll, and applies the others', async () => {
    db = await createTestDatabase(dialect)
    const clock = { now: T0 }
    let failing = true
    runtime = await openServiceRuntime({
      databaseUrl: db.url,
      clock: () => clock.now,
      storeOptions: {
        beforeCommit: (_trx, changes) => {
          if (failing && changes.some((c) => c.audit?.actor === 'bob@example.com')) {
            throw new Error('the database went away')
          }
        },
      },
    })
    await ensureWorkspace(runtime, {
      adminEmail: 'ann@example.com',
      adminPassword: 'password-123',
      workspaceName: 'Acme',
      adminName: 'Ann',
    })
    const [bobs, anns] = (await runtime.knex('flagsync_environments').orderBy('id').pluck('id')) as string[]
    const envOf = (who: string) => (who.startsWith('ann') ? anns : bobs) as string
    await runtime.write(async (_trx, flags) => {
      flags.put({ key: 'anns', is_enabled: false }, envOf('ann'))
      flags.put({ key: 'bobs', is_enabled: false }, envOf('bob'))
    })
    // Two environments: two transactions, the failing one first.
    const creator = await adminId(runtime)
    await runtime.knex(SCHEDULES_TABLE).insert(
      ['bob@example.com', 'ann@example.com'].map((who) => ({
        environment_id: envOf(who),
        flag_key: who.startsWith('ann') ? 'anns' : 'bobs',
        patch: '{"is_enabled":true}',
        run_at: T0,
        status: 'pending',
        created_by: who,
        created_by_actor: who,
        created_by_user_id: creator, // one who may write flags: the names only tell the audit contexts apart
        created_at: T0,
      })),
    )
    const { timers, next } = manualTimers()
    const runner = new ScheduleRunner(runtime, { pollMs: 60_000, timers, random: () => 0 })
    runtime.onClose(() => runner.close())
    runner.nudge()
    ;(await next(-1)).fn()
    expect((await next(1)).ms).toBe(60_000) // not at once: the failed batch would fail again
    const statuses = async () =>
      Object.fromEntries(
        ((await runtime.knex(SCHEDULES_TABLE).select('created_by', 'status')) as Array<Record<string, string>>).map(
          (r) => [r.created_by, r.status],
        ),
      )
    expect(await statuses()).toEqual({ 'ann@example.com': 'applied', 'bob@example.com': 'pending' })

    failing = false
    ;(await next(1)).fn()
    await next(2)
    expect(await statuses()).toEqual({ 'ann@example.com': 'applied', 'bob@example.com': 'applied' })
  })
})
