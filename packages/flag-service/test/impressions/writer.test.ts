import { DIALECTS } from '@flagsync/test-support/databases'
import { describe, expect, it } from 'vitest'
import { IMPRESSION_TABLES, ImpressionWriter, type IngestBatch } from '../../src/impressions/index.js'
import { T0 } from '../harness.js'
import { impressionSuite } from './fixture.js'

describe.each(DIALECTS)('group commit of impression batches on %s', (dialect) => {
  const { fx } = impressionSuite(dialect)

  const batch = (environmentId: string, flag: string, n: number): IngestBatch => ({
    environmentId,
    receivedAt: T0,
    rows: Array.from({ length: n }, (_, i) => ({
      flag_key: flag,
      user_id: `u${i}`,
      value: 'true',
      context: null,
      evaluated_at: T0,
    })),
  })
  /** How many INSERTs of impression rows (one per transaction here) run during `fn`. */
  const countInserts = async (fn: () => Promise<unknown>) => {
    const knex = fx().h.server.runtime.knex
    let inserts = 0
    const listener = (q: { sql: string }) => {
      if (q.sql.startsWith(`insert into ${IMPRESSION_TABLES.impressions} `)) inserts++
    }
    knex.on('query', listener)
    try {
      await fn()
    } finally {
      knex.off('query', listener)
    }
    return inserts
  }

  it('stores batches queued together in shared transactions, and each is answered', async () => {
    const writer = new ImpressionWriter(fx().h.server.runtime.knex, dialect)
    const inserts = await countInserts(() =>
      Promise.all(Array.from({ length: 6 }, (_, i) => writer.write(batch(fx().envId, `group-${i % 2}`, 100)))),
    )
    // The first batch goes alone at once; the others queue meanwhile and share the next transaction(s).
    expect(inserts).toBe(dialect === 'sqlite' ? 2 : 3)
    expect((await fx().list('flag_key=group-0')).body.total).toBe(300)
    expect((await fx().list('flag_key=group-1')).body.total).toBe(300)
    const stats = (await fx().stats()).body as Array<{ flag_key: string; total: number; unique_users: number }>
    expect(stats.filter((s) => s.flag_key.startsWith('group-'))).toEqual([
      expect.objectContaining({ flag_key: 'group-0', total: 300, unique_users: 100 }),
      expect.objectContaining({ flag_key: 'group-1', total: 300, unique_users: 100 }),
    ])
    await writer.whenIdle()
  })

  it('counts the same in a group whose batches were planned as they were queued (names interned already)', async () => {
    const writer = new ImpressionWriter(fx().h.server.runtime.knex, dialect)
    await writer.write(batch(fx().envId, 'merged-0', 1))
    await writer.write(batch(fx().envId, 'merged-1', 1))
    // Every name is interned now: on SQLite each batch is planned when queued and a group merges the plans.
    const six = Array.from({ length: 6 }, (_, i) => batch(fx().envId, `merged-${i % 2}`, 50 + i))
    await Promise.all(six.map((b) => writer.write(b)))
    const stats = (await fx().stats()).body as Array<{ flag_key: string; total: number; unique_users: number }>
    expect(stats.filter((s) => s.flag_key.startsWith('merged-'))).toEqual([
      expect.objectContaining({
        flag_key: 'merged-0',
        total: 1 + 50 + 52 + 54,
        true_count: 1 + 50 + 52 + 54,
        unique_users: 54,
      }),
      expect.objectContaining({
        flag_key: 'merged-1',
        total: 1 + 51 + 53 + 55,
        true_count: 1 + 51 + 53 + 55,
        unique_users: 55,
      }),
    ])
    expect((await fx().list('flag_key=merged-1&value=true')).body.total).toBe(1 + 51 + 53 + 55)
    expect((await fx().list('flag_key=merged-1&user_id=u3')).body.total).toBe(3)
    await writer.whenIdle()
  })

  it('splits a group that fails, so only the failing batch is refused', async () => {
    const writer = new ImpressionWriter(fx().h.server.runtime.knex, dialect)
    const gone = '00000000-0000-4000-8000-000000000000' // no such environment: its foreign key fails
    const first = writer.write(batch(fx().envId, 'split-a', 10))
    const results = await Promise.allSettled([
      first,
      writer.write(batch(fx().envId, 'split-b', 10)),
      writer.write(batch(gone, 'split-c', 10)),
      writer.write(batch(fx().stagingId, 'split-d', 10)),
    ])
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'fulfilled', 'rejected', 'fulfilled'])
    expect((await fx().list('flag_key=split-b')).body.total).toBe(10)
    expect((await fx().list('flag_key=split-d', fx().h.admin, fx().stagingId)).body.total).toBe(10)
    const knex = fx().h.server.runtime.knex
    expect(await knex(IMPRESSION_TABLES.envs).where('environment_id', gone)).toEqual([])
    expect(await knex(IMPRESSION_TABLES.flags).where('flag_key', 'split-c')).toEqual([])
  })
})
