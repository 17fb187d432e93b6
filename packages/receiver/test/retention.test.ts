import { DEFAULT_BATCH_RETENTION_MS } from '@flagsync/receiver'
import { DIALECTS } from '@flagsync/test-support/databases'
import { afterEach, describe, expect, it } from 'vitest'
import { batch, closeAllHarnesses, type HarnessOptions, insert, startHarness as startOn, update } from './harness.js'

afterEach(closeAllHarnesses)

const DAY = 24 * 60 * 60 * 1000

describe.each(DIALECTS)('on %s', (dialect) => {
  const startHarness = (options: HarnessOptions = {}) => startOn({ dialect, ...options })

  describe('batch-id retention', () => {
    it('is 30 days by default', () => {
      expect(DEFAULT_BATCH_RETENTION_MS).toBe(30 * DAY)
    })

    it('pruneBatches() forgets ids older than the retention; younger ones stay duplicates', async () => {
      let now = Date.UTC(2030, 0, 1)
      const h = await startHarness({ clock: () => now, pruneIntervalMs: 0 })
      const old = batch([insert('a', { is_enabled: true })], 'old')
      const young = batch([update('a', { description: 'young' })], 'young')
      expect((await h.post(old)).body.applied).toBe(1)
      now += 20 * DAY
      expect((await h.post(young)).body.applied).toBe(1)

      now += 10 * DAY // old is 30 days old: not yet older than the retention
      expect(await h.receiver.pruneBatches()).toBe(0)
      now += 1
      expect(await h.receiver.pruneBatches()).toBe(1)
      expect(await h.db.knex('flagsync_batches').pluck('batch_id')).toEqual(['young'])

      expect((await h.post(young)).body).toEqual({ batchId: 'young', applied: 0, duplicate: true })
      // Forgotten: a replay of `old` now applies again (this is why the retention is long).
      expect((await h.post(old)).body).toEqual({
        batchId: 'old',
        applied: 1,
        revision: (await h.store.changesSince(0)).at(-1)?.revision,
      })
      expect(await h.store.get('a')).toMatchObject({ description: null })
    })

    it('honours a custom batchRetentionMs', async () => {
      let now = 1_000_000
      const h = await startHarness({ clock: () => now, batchRetentionMs: 1000, pruneIntervalMs: 0 })
      await h.post(batch([insert('a', { is_enabled: true })], 'b1'))
      now += 1001
      expect(await h.receiver.pruneBatches()).toBe(1)
    })

    it('without any timer, a successful batch prunes at most once per pruneIntervalMs', async () => {
      const MINUTE = 60 * 1000
      let now = Date.UTC(2030, 0, 1)
      const h = await startHarness({ clock: () => now, batchRetentionMs: MINUTE, pruneIntervalMs: 60 * MINUTE })
      const ids = async () => (await h.db.knex('flagsync_batches').orderBy('batch_id').pluck('batch_id')) as string[]
      await h.post(batch([insert('a', { is_enabled: true })], 'b1')) // the first batch prunes (nothing to drop yet)
      now += 2 * MINUTE
      await h.post(batch([update('a', { description: 'x' })], 'b2')) // b1 is past retention, but pruning is not due
      await new Promise((resolve) => setTimeout(resolve, 50))
      expect(await ids()).toEqual(['b1', 'b2'])

      now += 59 * MINUTE
      await h.post(batch([update('a', { description: 'y' })], 'b3')) // an hour since the last prune: b1 and b2 go
      await expect.poll(ids).toEqual(['b3'])
    })
  })
})
