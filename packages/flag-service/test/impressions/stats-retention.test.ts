import { ConfigError } from '@flagsync/flag-service'
import { DIALECTS } from '@flagsync/test-support/databases'
import { afterEach, describe, expect, it, vi } from 'vitest'
import {
  IMPRESSION_TABLES,
  pruneExpiredImpressions,
  pruneImpressions,
  retentionFromEnv,
  startImpressionRetention,
} from '../../src/impressions/index.js'
import { DAY, startHarness, T0 } from '../harness.js'
import { impressionSuite, impressions } from './fixture.js'

const at = (ms: number) => new Date(ms).toISOString()

describe.each(DIALECTS)('impression stats, retention and cascades on %s', (dialect) => {
  const { fx, knex, advance } = impressionSuite(dialect)
  const count = async (q: ReturnType<ReturnType<typeof knex>>) => Number((await q.count({ n: '*' }).first())?.n)
  /** Rows of every impression table that belong to an environment (ids captured first, for after a cascade). */
  const footprint = async (environmentId: string) => {
    const T = IMPRESSION_TABLES
    const env = (await knex()(T.envs).where('environment_id', environmentId).first('id')) as { id: number } | undefined
    const flagIds = (await knex()(T.flags).where('environment_id', environmentId).pluck('id')) as number[]
    return async () => ({
      [T.envs]: await count(knex()(T.envs).where('environment_id', environmentId)),
      [T.flags]: await count(knex()(T.flags).where('environment_id', environmentId)),
      [T.values]: await count(knex()(T.values).where('environment_id', environmentId)),
      [T.series]: await count(knex()(T.series).whereIn('flag_id', flagIds)),
      [T.users]: await count(knex()(T.users).whereIn('flag_id', flagIds)),
      [T.impressions]: await count(knex()(T.impressions).where('env_id', env?.id ?? -1)),
    })
  }

  it('answers per flag: total, true and false counts, unique users (across batches), last seen, per-value counts', async () => {
    expect((await fx().stats()).body).toEqual([])
    expect(
      (
        await fx().post([
          { flag_key: 'zeta', value: 'true', user_id: 'a', evaluated_at: at(T0 + 5000) },
          { flag_key: 'zeta', value: 'true', user_id: 'a', evaluated_at: at(T0 + 1000) },
          { flag_key: 'zeta', value: 'false', user_id: 'b', evaluated_at: at(T0 + 9000) },
          { flag_key: 'zeta', value: 'false', user_id: null, evaluated_at: at(T0 + 2000) },
          { flag_key: 'colors', value: 'blue', user_id: 'a', evaluated_at: at(T0 + 3000) },
          { flag_key: 'colors', value: 'TRUE', user_id: 'c', evaluated_at: at(T0 + 4000) },
        ])
      ).status,
    ).toBe(204)
    // A later batch: a known user and a new one; an evaluation older than last_seen does not move it back.
    expect(
      (
        await fx().post([
          { flag_key: 'zeta', value: 'true', user_id: 'b', evaluated_at: at(T0 + 500) },
          { flag_key: 'zeta', value: 'true', user_id: 'd', evaluated_at: at(T0 + 8000) },
        ])
      ).status,
    ).toBe(204)
    const res = await fx().stats()
    expect(res.status).toBe(200)
    expect(res.body).toEqual([
      {
        flag_key: 'colors',
        total: 2,
        true_count: 0,
        false_count: 0,
        unique_users: 2,
        last_seen: at(T0 + 4000),
        values: [
          { value: 'TRUE', count: 1 },
          { value: 'blue', count: 1 },
        ],
      },
      {
        flag_key: 'zeta',
        total: 6,
        true_count: 4,
        false_count: 2,
        unique_users: 3,
        last_seen: at(T0 + 9000),
        values: [
          { value: 'true', count: 4 },
          { value: 'false', count: 2 },
        ],
      },
    ])
    // Per environment: staging has none of it.
    expect((await fx().stats(fx().h.admin, fx().stagingId)).body).toEqual([])
  })

  it('retention drops old rows (list totals follow) while stats keep their lifetime counts', async () => {
    const env = fx().envId
    const start = fx().h.clock.now
    expect((await fx().post(impressions(7, { flag_key: 'ret', value: 'old' }))).status).toBe(204)
    await advance(20 * DAY)
    expect((await fx().post(impressions(3, { flag_key: 'ret', value: 'new' }))).status).toBe(204)
    await advance(15 * DAY)
    const statsBefore = (await fx().stats()).body
    const beforeTotal = (await fx().list()).body.total as number

    // 30 days: only the batch received 35 days ago goes (the one from 15 days ago stays), in chunks of 2.
    expect(await pruneExpiredImpressions(fx().h.server.runtime, { maxAgeMs: 30 * DAY, chunk: 2 })).toBe(beforeTotal - 3)
    const list = await fx().list('flag_key=ret')
    expect(list.body.total).toBe(3)
    expect(list.body.items.map((i: { value: string }) => i.value)).toEqual(['new', 'new', 'new'])
    expect((await fx().list('value=old')).body).toEqual({ items: [], total: 0 })
    expect((await fx().list()).body.total).toBe(3)
    expect((await fx().stats()).body).toEqual(statsBefore)
    // The counters of a value with no rows left are at 0; the pairs behind unique_users stay.
    const old = await knex()(IMPRESSION_TABLES.values)
      .where({ environment_id: env, value: 'old' })
      .first('id', 'stored')
    expect(Number(old.stored)).toBe(0)
    const series = await knex()(IMPRESSION_TABLES.series).where('value_id', old.id).select('stored')
    expect(series.map((r: { stored: number | string }) => Number(r.stored))).toEqual([0])
    expect((await (await footprint(env))())[IMPRESSION_TABLES.users]).toBeGreaterThan(0)
    // Nothing is old enough any more: a no-op.
    expect(await pruneImpressions(knex(), start, { chunk: 2 })).toBe(0)
    // New rows count on top of what is left.
    expect((await fx().post(impressions(2, { flag_key: 'ret', value: 'new' }))).status).toBe(204)
    expect((await fx().list('flag_key=ret&value=new')).body.total).toBe(5)
  })

  it('runs retention on a timer until the runtime closes', async () => {
    const runtime = fx().h.server.runtime
    expect((await fx().post(impressions(4, { flag_key: 'timer' }))).status).toBe(204)
    await advance(2 * DAY)
    const stop = startImpressionRetention(runtime, { maxAgeMs: DAY, intervalMs: 20, firstRunMs: 5 })
    await expect.poll(async () => (await fx().list('flag_key=timer')).body.total, { timeout: 5000 }).toBe(0)
    await stop()
    expect((await fx().post(impressions(4, { flag_key: 'timer' }))).status).toBe(204)
    await advance(2 * DAY)
    await new Promise((r) => setTimeout(r, 100))
    expect((await fx().list('flag_key=timer')).body.total).toBe(4) // stopped: nothing pruned
  })

  it('deleting an environment or a project removes its impressions, counters and rollups', async () => {
    expect((await fx().post(impressions(3, { flag_key: 'gone' }), fx().stagingKey, fx().stagingId)).status).toBe(204)
    expect(
      (await fx().post(impressions(2, { flag_key: 'gone' }), fx().otherProjectKey, fx().otherProjectEnvId)).status,
    ).toBe(204)
    const staging = await footprint(fx().stagingId)
    const other = await footprint(fx().otherProjectEnvId)
    const production = await footprint(fx().envId)
    for (const n of Object.values(await staging())) expect(n).toBeGreaterThan(0)
    for (const n of Object.values(await other())) expect(n).toBeGreaterThan(0)
    const kept = await production()

    const del = await fx().h.call(`/api/projects/${fx().h.defaultProjectId}/environments/${fx().stagingId}`, {
      method: 'DELETE',
      as: fx().h.admin,
    })
    expect(del.status).toBe(204)
    for (const n of Object.values(await staging())) expect(n).toBe(0)

    const projects = (await fx().h.call('/api/projects', { as: fx().h.admin })).body as Array<{
      id: string
      name: string
    }>
    const project = projects.find((p) => p.name === 'Other')
    expect((await fx().h.call(`/api/projects/${project?.id}`, { method: 'DELETE', as: fx().h.admin })).status).toBe(204)
    for (const n of Object.values(await other())) expect(n).toBe(0)
    expect(await production()).toEqual(kept)
  })
})

describe('retention settings', () => {
  afterEach(() => {
    vi.unstubAllEnvs()
  })

  it('reads IMPRESSION_RETENTION_DAYS (default 30, 0 keeps forever) and the interval, naming a bad value', () => {
    expect(retentionFromEnv({})).toEqual({ maxAgeMs: 30 * DAY, intervalMs: 3_600_000, firstRunMs: 60_000 })
    expect(retentionFromEnv({ IMPRESSION_RETENTION_DAYS: '7', IMPRESSION_PRUNE_INTERVAL_MINUTES: '5' })).toEqual({
      maxAgeMs: 7 * DAY,
      intervalMs: 300_000,
      firstRunMs: 60_000,
    })
    expect(retentionFromEnv({ IMPRESSION_RETENTION_DAYS: '0' }).maxAgeMs).toBe(0)
    expect(() => retentionFromEnv({ IMPRESSION_RETENTION_DAYS: '30d' })).toThrow(ConfigError)
    expect(() => retentionFromEnv({ IMPRESSION_RETENTION_DAYS: '-1' })).toThrow(/IMPRESSION_RETENTION_DAYS must be/)
    expect(() => retentionFromEnv({ IMPRESSION_PRUNE_INTERVAL_MINUTES: '0' })).toThrow(
      /IMPRESSION_PRUNE_INTERVAL_MINUTES must be an integer from 1/,
    )
  })

  it('a malformed setting stops the service from starting', async () => {
    await expect(startHarness('sqlite', { env: { IMPRESSION_RETENTION_DAYS: 'forever' } })).rejects.toThrow(
      /IMPRESSION_RETENTION_DAYS must be an integer/,
    )
  })
})
