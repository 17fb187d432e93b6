import { tableCollection } from '@flagsync/receiver'
import { type FlagStore, TABLES } from '@flagsync/store'
import { DIALECTS } from '@flagsync/test-support/databases'
import { afterEach, describe, expect, it } from 'vitest'
import { z } from 'zod'
import {
  batch,
  closeAllHarnesses,
  flagsOf,
  fullFlag,
  type Harness,
  type HarnessOptions,
  insert,
  remove,
  startHarness as startOn,
  update,
} from './harness.js'

afterEach(closeAllHarnesses)

const based = <T extends object>(op: T, baseRevision: number) => ({ ...op, baseRevision })

/** Every row the receiver can write, to show a 409 changed nothing. */
async function dump(h: Harness): Promise<Record<string, unknown[]>> {
  const out: Record<string, unknown[]> = {}
  for (const table of [TABLES.flags, TABLES.changes, TABLES.batches, TABLES.meta]) {
    out[table] = await h.db.knex(table).select('*').orderByRaw('1, 2')
  }
  return out
}

/** The revision of a flag's last change. */
async function revisionOf(store: FlagStore, key: string): Promise<number> {
  const row = (await store.loadAll('')).rows.find((r) => r.key === key)
  if (!row) throw new Error(`no flag ${key}`)
  return row.revision
}

describe.each(DIALECTS)('conflicts on %s', (dialect) => {
  const startHarness = (options: HarnessOptions = {}) => startOn({ dialect, ...options })

  /** A flag both editors saw at `base`, then editor A's changes delivered. */
  async function seeded(h: Harness, changesByA: Record<string, unknown> | 'delete') {
    expect((await h.post(batch([insert('f', { is_enabled: true, rollout_percentage: 10 })]))).status).toBe(200)
    const base = await revisionOf(h.store, 'f')
    const byA = changesByA === 'delete' ? remove('f') : update('f', changesByA)
    expect((await h.post(batch([based(byA, base)]))).status).toBe(200)
    return base
  }

  it('merges an edit of other fields on top of what changed since the base', async () => {
    const h = await startHarness()
    const base = await seeded(h, { description: 'by A' })
    const res = await h.post(batch([based(update('f', { rollout_percentage: 50 }), base)]))
    expect(res.status).toBe(200)
    expect((await flagsOf(h.store)).f).toEqual(fullFlag('f', { rollout_percentage: 50, description: 'by A' }))
  })

  it('answers 409 with the conflict body for the same field changed to different values, and applies nothing', async () => {
    const h = await startHarness()
    const base = await seeded(h, { rollout_percentage: 30 })
    const current = await revisionOf(h.store, 'f')
    const before = await dump(h)
    const res = await h.post(
      batch(
        [insert('other', { is_enabled: true }), based(update('f', { rollout_percentage: 50, description: 'x' }), base)],
        'conflicting',
      ),
    )
    expect(res.status).toBe(409)
    expect(res.body).toEqual({
      error: expect.stringContaining('operation 1 (flags/f) conflicts'),
      code: 'conflict',
      conflicts: [
        {
          operationIndex: 1,
          collection: 'flags',
          recordId: 'f',
          kind: 'field',
          fields: ['rollout_percentage'],
          base: fullFlag('f', { rollout_percentage: 10 }),
          current: fullFlag('f', { rollout_percentage: 30 }),
          currentRevision: current,
          reason: expect.stringContaining('rollout_percentage'),
        },
      ],
    })
    // Nothing of the batch, not even the unrelated insert or the batch id.
    expect(await dump(h)).toEqual(before)
  })

  it('is a deleted conflict for an update (or a delete) of a flag deleted since the base', async () => {
    const h = await startHarness()
    const base = await seeded(h, 'delete')
    const res = await h.post(batch([based(update('f', { is_enabled: false }), base), based(remove('f'), base)]))
    expect(res.status).toBe(409)
    expect(res.body.conflicts).toEqual([
      expect.objectContaining({ operationIndex: 0, kind: 'deleted', fields: ['is_enabled'], current: null }),
      expect.objectContaining({ operationIndex: 1, kind: 'deleted', fields: [], current: null, currentRevision: null }),
    ])
    expect(res.body.conflicts[0].base).toEqual(fullFlag('f', { rollout_percentage: 10 }))
  })

  it('is an exists conflict for an insert of a key someone else created since the base', async () => {
    const h = await startHarness()
    expect((await h.post(batch([insert('seen', { is_enabled: true })]))).status).toBe(200)
    const base = await revisionOf(h.store, 'seen')
    expect((await h.post(batch([insert('new', { is_enabled: true, description: 'by A' })]))).status).toBe(200)
    const res = await h.post(batch([based(insert('new', { is_enabled: false }), base)]))
    expect(res.status).toBe(409)
    expect(res.body.conflicts).toEqual([
      expect.objectContaining({
        kind: 'exists',
        fields: ['is_enabled', 'description'],
        base: null,
        current: fullFlag('new', { description: 'by A' }),
      }),
    ])
    // A key nobody created is inserted as always.
    expect((await h.post(batch([based(insert('fresh', { is_enabled: true }), base)]))).status).toBe(200)
  })

  it('is a conflict for a base revision the store never issued (a client of a restored database), not a blind write', async () => {
    const h = await startHarness()
    await seeded(h, { rollout_percentage: 20 })
    const newest = await revisionOf(h.store, 'f')
    const before = await dump(h)
    const res = await h.post(batch([based(update('f', { rollout_percentage: 50 }), newest + 40)]))
    expect(res.status).toBe(409)
    expect(res.body.conflicts).toEqual([
      expect.objectContaining({
        kind: 'field',
        fields: ['rollout_percentage'],
        base: null,
        currentRevision: newest,
        reason: expect.stringContaining(`revision ${newest + 40} was never issued here (the newest is ${newest})`),
      }),
    ])
    expect(await dump(h)).toEqual(before)
    // A delete from that base would drop what it never saw; setting the value already there loses nothing.
    expect((await h.post(batch([based(remove('f'), newest + 40)]))).status).toBe(409)
    expect((await h.post(batch([based(update('f', { rollout_percentage: 20 }), newest + 40)]))).status).toBe(200)
  })

  it('of two editors sending the same field from the same base at the same time, exactly one wins', async () => {
    const h = await startHarness()
    expect((await h.post(batch([insert('f', { is_enabled: true, rollout_percentage: 10 })]))).status).toBe(200)
    const base = await revisionOf(h.store, 'f')
    for (let round = 0; round < 5; round++) {
      const current = await revisionOf(h.store, 'f')
      const [a, b] = await Promise.all([
        h.post(batch([based(update('f', { rollout_percentage: 20 + round }), current)])),
        h.post(batch([based(update('f', { rollout_percentage: 60 + round }), current)])),
      ])
      expect([a.status, b.status].sort()).toEqual([200, 409])
      const winner = a.status === 200 ? 20 + round : 60 + round
      expect((await flagsOf(h.store)).f).toEqual(fullFlag('f', { rollout_percentage: winner }))
    }
    expect(base).toBe(1)
  })

  it("applies everything with conflicts: 'last-writer-wins' (baseRevision ignored)", async () => {
    const h = await startHarness({ conflicts: 'last-writer-wins' })
    const base = await seeded(h, { rollout_percentage: 30 })
    const res = await h.post(batch([based(update('f', { rollout_percentage: 50 }), base)]))
    expect(res.status).toBe(200)
    expect((await flagsOf(h.store)).f).toEqual(fullFlag('f', { rollout_percentage: 50 }))
  })

  it('checks record-level and says so when the base revision was pruned from the change log', async () => {
    let now = 1_000_000
    const h = await startHarness({ storeOptions: { clock: () => now }, clock: () => now })
    const base = await seeded(h, { description: 'by A' })
    now += 10_000
    // Only A's change (the flag's latest state) is left.
    expect(await h.store.pruneHistory(5_000, 0)).toBe(1)
    const res = await h.post(batch([based(update('f', { rollout_percentage: 50 }), base)]))
    expect(res.status).toBe(409)
    expect(res.body.conflicts[0]).toMatchObject({ kind: 'field', fields: ['rollout_percentage'], base: null })
    expect(res.body.conflicts[0].reason).toContain('record-level')
    // Based on the current revision it applies: nothing changed since.
    const current = await revisionOf(h.store, 'f')
    expect((await h.post(batch([based(update('f', { rollout_percentage: 50 }), current)]))).status).toBe(200)
  })

  it('keeps each flag’s latest state when pruning, so a base older than the retention still merges', async () => {
    let now = 1_000_000
    const h = await startHarness({ storeOptions: { clock: () => now }, clock: () => now })
    expect((await h.post(batch([insert('old', { is_enabled: true })]))).status).toBe(200)
    const base = await revisionOf(h.store, 'old')
    now += 10_000
    expect((await h.post(batch([insert('g', { is_enabled: true })]))).status).toBe(200)
    expect((await h.post(batch([remove('g')]))).status).toBe(200)
    now += 10_000
    // g's two rows go (deleted), old's only row stays.
    expect(await h.store.pruneHistory(5_000, 0)).toBe(2)
    expect((await h.post(batch([based(update('old', { description: 'by A' }), base)]))).status).toBe(200)
    const res = await h.post(batch([based(update('old', { rollout_percentage: 5 }), base)]))
    expect(res.status).toBe(200)
    expect((await flagsOf(h.store)).old).toEqual(fullFlag('old', { description: 'by A', rollout_percentage: 5 }))
  })

  it('gives a table collection with a revision column record-level checks', async () => {
    const h = await startHarness({
      collections: {
        todos: tableCollection({
          table: 'todos',
          schema: z.object({ id: z.string(), title: z.string() }),
          revisionColumn: 'version',
        }),
      },
    })
    await h.db.knex.schema.createTable('todos', (t) => {
      t.string('id').primary()
      t.string('title').notNullable()
      t.integer('version').notNullable().defaultTo(0)
    })
    expect((await h.post(batch([insert('t1', { title: 'a' }, 'todos')]))).status).toBe(200)
    expect(await h.db.knex('todos').first()).toEqual({ id: 't1', title: 'a', version: 1 })
    expect((await h.post(batch([based(update('t1', { title: 'b' }, 'todos'), 1)]))).status).toBe(200)
    const stale = await h.post(batch([based(update('t1', { title: 'c' }, 'todos'), 1)]))
    expect(stale.status).toBe(409)
    expect(stale.body.conflicts).toEqual([
      expect.objectContaining({ collection: 'todos', recordId: 't1', kind: 'field', currentRevision: 2 }),
    ])
    expect(stale.body.conflicts[0].reason).toContain('record-level')
    const gone = await h.post(batch([based(update('nope', { title: 'c' }, 'todos'), 1)]))
    expect(gone.body.conflicts[0]).toMatchObject({ kind: 'deleted' })
    expect(await h.db.knex('todos').first()).toEqual({ id: 't1', title: 'b', version: 2 })
  })

  it('lets a handler collection see baseRevision and refuse with OperationConflict', async () => {
    const { OperationConflict } = await import('@flagsync/receiver')
    const seen: Array<number | undefined> = []
    const h = await startHarness({
      collections: {
        notes: {
          async insert(_ctx, _id, _record, meta) {
            seen.push(meta.baseRevision)
            if (meta.baseRevision === 1) {
              throw new OperationConflict({
                kind: 'exists',
                fields: [],
                base: null,
                current: { id: 'n' },
                currentRevision: 2,
                reason: 'taken',
              })
            }
          },
          async update() {},
          async delete() {},
        },
      },
    })
    expect((await h.post(batch([insert('n', {}, 'notes'), based(insert('n', {}, 'notes'), 7)]))).status).toBe(200)
    const res = await h.post(batch([based(insert('n', {}, 'notes'), 1)]))
    expect(res.status).toBe(409)
    expect(res.body.conflicts).toEqual([
      {
        operationIndex: 0,
        collection: 'notes',
        recordId: 'n',
        kind: 'exists',
        fields: [],
        base: null,
        current: { id: 'n' },
        currentRevision: 2,
        reason: 'taken',
      },
    ])
    expect(seen).toEqual([undefined, 7, 1])
  })

  it('records the audit trail on each change: actor, declared actor, batch id and operation index', async () => {
    const h = await startHarness({ token: 's3cret' })
    const res = await h.post(batch([insert('a', { is_enabled: true }), insert('b', { is_enabled: true })], 'audit-1'), {
      Authorization: 'Bearer s3cret',
      'X-Flagsync-Actor': 'alice%20smith',
    })
    expect(res.status).toBe(200)
    const rows = await h.db
      .knex(TABLES.changes)
      .orderBy('revision')
      .select('key', 'actor', 'declared_actor', 'source', 'batch_id', 'op_index')
    expect(rows).toEqual([
      {
        key: 'a',
        actor: 'receiver-token',
        declared_actor: 'alice smith',
        source: 'sync',
        batch_id: 'audit-1',
        op_index: 0,
      },
      {
        key: 'b',
        actor: 'receiver-token',
        declared_actor: 'alice smith',
        source: 'sync',
        batch_id: 'audit-1',
        op_index: 1,
      },
    ])
    const bad = await h.post(batch([insert('c', { is_enabled: true })]), {
      Authorization: 'Bearer s3cret',
      'X-Flagsync-Actor': 'x'.repeat(300),
    })
    expect(bad.status).toBe(422)
  })
})
