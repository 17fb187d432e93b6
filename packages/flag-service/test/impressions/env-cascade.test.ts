import { DIALECTS, type Dialect } from '@flagsync/test-support/databases'
import { describe, expect, it } from 'vitest'
import { IMPRESSION_TABLES as T } from '../../src/impressions/index.js'
import { ingestBatches } from '../../src/impressions/ingest.js'
import type { IngestBatch } from '../../src/impressions/types.js'
import { T0 } from '../harness.js'
import { impressionSuite } from './fixture.js'

// Impressions go with their environment (a foreign key on SQLite, a trigger on PostgreSQL), and ingest never
// leaves rows behind for an environment deleted before or while it stores a batch.

/** The fixture of a suite, with what its tests need: a new environment, a batch, the rows stored. */
function suite(dialect: Dialect) {
  const { fx, knex } = impressionSuite(dialect)
  return {
    knex,
    fixture: fx,
    async newEnvironment(name: string) {
      const { h } = fx()
      const res = await h.call(`/api/projects/${h.defaultProjectId}/environments`, {
        method: 'POST',
        as: h.admin,
        body: { name },
      })
      expect(res.status).toBe(200)
      return (res.body as { id: string }).id
    },
    batch: (environmentId: string, n: number, user: (i: number) => string | null): IngestBatch => ({
      environmentId,
      receivedAt: T0,
      rows: Array.from({ length: n }, (_, i) => ({
        flag_key: 'cascade',
        user_id: user(i),
        value: 'true',
        context: null,
        evaluated_at: T0,
      })),
    }),
    envRowOf: async (environmentId: string) =>
      Number(((await knex()(T.envs).where('environment_id', environmentId).first('id')) as { id: number | string }).id),
    rowsOf: async (envRow: number) =>
      Number(
        ((await knex()(T.impressions).where('env_id', envRow).count({ n: '*' }).first()) as { n: number | string }).n,
      ),
  }
}

describe.each(DIALECTS)('impressions of a deleted environment on %s', (dialect) => {
  const s = suite(dialect)

  it('deleting the environment deletes its impressions, and a batch for it afterwards stores nothing', async () => {
    const f = s.fixture()
    const id = await s.newEnvironment('Cascade')
    await ingestBatches(s.knex(), dialect, [s.batch(id, 20, (i) => `u${i}`)])
    const envRow = await s.envRowOf(id)
    expect(await s.rowsOf(envRow)).toBe(20)

    const del = await f.h.call(`/api/projects/${f.h.defaultProjectId}/environments/${id}`, {
      method: 'DELETE',
      as: f.h.admin,
    })
    expect(del.status).toBe(204)
    expect(await s.rowsOf(envRow)).toBe(0)

    // The environment's interned ids are still cached: the batch's transaction has to find out by itself.
    await expect(ingestBatches(s.knex(), dialect, [s.batch(id, 20, () => null)])).rejects.toThrow()
    expect(await s.rowsOf(envRow)).toBe(0)
    expect(await s.knex()(T.envs).where('environment_id', id)).toEqual([])
  })
})

describe('impressions of an environment deleted while a batch is stored on postgres', () => {
  const s = suite('postgres')

  /** Resolves once some session of the test database waits on a row lock (the batch, behind the delete). */
  async function waitForLockWait(): Promise<void> {
    for (let i = 0; i < 200; i++) {
      const waiting = (await s
        .knex()
        .raw(
          "select count(*)::int as n from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'",
        )) as { rows: Array<{ n: number }> }
      if ((waiting.rows[0]?.n ?? 0) > 0) return
      await new Promise((r) => setTimeout(r, 25))
    }
    throw new Error('the batch never waited for the delete')
  }

  it('fails the batch whole once the delete commits', async () => {
    const id = await s.newEnvironment('Cascade while storing')
    await ingestBatches(s.knex(), 'postgres', [s.batch(id, 5, () => null)])
    const envRow = await s.envRowOf(id)

    const deleting = await s.knex().transaction()
    try {
      await deleting('flagsync_environments').where('id', id).delete()
      // Anonymous impressions: the first statement to meet the deleted rows is the environment's counter.
      const storing = ingestBatches(s.knex(), 'postgres', [s.batch(id, 30, () => null)])
      storing.catch(() => {}) // awaited below
      await waitForLockWait()
      await deleting.commit()
      await expect(storing).rejects.toThrow(/foreign key/)
    } finally {
      if (!deleting.isCompleted()) await deleting.rollback()
    }
    expect(await s.rowsOf(envRow)).toBe(0)
  })
})
