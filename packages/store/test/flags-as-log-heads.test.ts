import { TABLES } from '@flagsync/store'
import { describe, expect, it } from 'vitest'
import { flag, json, openWithMigrations, useTestDatabase } from './migration-harness.js'

describe.each(['sqlite', 'postgres'] as const)('flags as heads of the change log on %s', (dialect) => {
  const database = useTestDatabase(dialect)
  const open = (clock?: () => number) => database.open(clock)

  it('migrates a 0003 database: flags, revisions and history kept, pruned head rows restored from the table', async () => {
    const old = await openWithMigrations(database.url, 3)
    const row = (revision: number, key: string, data: string | null, prev: number | null, scope = '') => ({
      revision,
      scope,
      key,
      data,
      created_at: 1000 + revision,
      actor: 'alice',
      declared_actor: null,
      source: 'sync',
      batch_id: `batch-${revision}`,
      op_index: 0,
      prev_revision: prev,
    })
    // A prefix prune (pruneChanges) dropped revisions 1-3, also c's only row (3): the table held its state alone.
    await old(TABLES.changes).insert([
      row(4, 'a', json('a', 1), null),
      row(5, 'a', json('a', 2), 4),
      row(6, 'b', json('b', 1), null, 'env'),
      row(7, 'd', json('d', 1), null),
      row(8, 'd', null, 7),
    ])
    await old(TABLES.flags).insert([
      { scope: '', key: 'a', data: json('a', 2), revision: 5, updated_at: 1005 },
      { scope: '', key: 'c', data: json('c', 1), revision: 3, updated_at: 1003 },
      { scope: 'env', key: 'b', data: json('b', 1), revision: 6, updated_at: 1006 },
    ])
    await old(TABLES.meta).where('name', 'revision').update({ value: 8 })
    await old(TABLES.meta).whereIn('name', ['pruned_through', 'prefix_pruned_through']).update({ value: 3 })
    await old.destroy()

    const { db, store, audit } = await open()
    expect((await db.knex('flagsync_migrations').orderBy('id').pluck('name')).at(-1)).toBe('0004_flags_as_log_heads')
    const all = await store.loadAll()
    expect(all.revision).toBe(8)
    expect(all.rows.map((r) => [r.scope, r.key, r.json, r.revision])).toEqual([
      ['', 'a', json('a', 2), 5],
      ['', 'c', json('c', 1), 3],
      ['env', 'b', json('b', 1), 6],
    ])
    expect(await store.get('c')).toEqual(flag('c', 1))
    // The view keeps the old table's columns for readers (the flag service reads it directly).
    const viewRow = await db.knex(TABLES.flags).where({ scope: '', key: 'a' }).first()
    expect({ ...viewRow, revision: Number(viewRow.revision), updated_at: Number(viewRow.updated_at) }).toEqual({
      scope: '',
      key: 'a',
      data: json('a', 2),
      revision: 5,
      updated_at: 1005,
    })
    const heads = await db.knex(TABLES.heads).orderBy(['scope', 'key']).select('scope', 'key', 'revision')
    expect(heads.map((h) => [h.scope, h.key, Number(h.revision)])).toEqual([
      ['', 'a', 5],
      ['', 'c', 3],
      ['env', 'b', 6],
    ])
    // c's state is back in the log at its revision, with no previous row (its history before was pruned).
    expect((await store.changesSince(0)).map((c) => [c.revision, c.key])).toEqual([
      [3, 'c'],
      [4, 'a'],
      [5, 'a'],
      [6, 'b'],
      [7, 'd'],
      [8, 'd'],
    ])
    expect((await audit.history('c')).entries.map((e) => [e.revision, e.after, e.beforeKnown])).toEqual([
      [3, flag('c', 1), false],
    ])
    expect((await audit.history('a')).entries.map((e) => [e.revision, e.before, e.after])).toEqual([
      [5, flag('a', 1), flag('a', 2)],
      [4, null, flag('a', 1)],
    ])

    // Writes continue: heads move, deletes drop them, chains continue, conflicts' lookups see the log.
    const { changes } = await store.write(async (w) => {
      w.put(flag('a', 3))
      await w.delete('c')
      w.put(flag('d', 2))
    })
    expect(changes.map((c) => [c.revision, c.key, c.json])).toEqual([
      [9, 'a', json('a', 3)],
      [10, 'c', null],
      [11, 'd', json('d', 2)],
    ])
    expect((await store.loadAll('')).rows.map((r) => [r.key, r.json, r.revision])).toEqual([
      ['a', json('a', 3), 9],
      ['d', json('d', 2), 11],
    ])
    expect((await audit.history('d')).entries.map((e) => [e.revision, e.action])).toEqual([
      [11, 'create'],
      [8, 'delete'],
      [7, 'update'], // whether d existed before 7 is unknown: the log was prefix-pruned
    ])
    const states = await store.write(async (w) =>
      w.statesAt([
        ['a', 4],
        ['c', 9],
        ['d', 8],
      ]),
    )
    expect(Object.fromEntries(states.result)).toEqual({
      'a@4': { flag: flag('a', 1), known: true },
      'c@9': { flag: flag('c', 1), known: true },
      'd@8': { flag: null, known: true },
    })
  })

  it('writes each flag’s JSON once: the heads hold revisions, the log the JSON', async () => {
    const { db, store } = await open()
    await store.write(async (w) => {
      w.put(flag('a', 1))
      w.put(flag('b', 1))
    })
    await store.write(async (w) => w.put(flag('a', 2)))
    const columns = Object.keys(await db.knex(TABLES.heads).columnInfo())
    expect(columns.sort()).toEqual(['key', 'revision', 'scope'])
    expect(
      (await db.knex(TABLES.heads).orderBy('key').select('key', 'revision')).map((r) => [r.key, Number(r.revision)]),
    ).toEqual([
      ['a', 3],
      ['b', 2],
    ])
    expect(await store.get('a')).toEqual(flag('a', 2))
    const loaded = await store.write(async (w) => (await w.committed('a')).revision)
    expect(loaded.result).toBe(3)
  })

  it('never prunes the row a live record’s head points at, however old (pruneChanges and pruneHistory)', async () => {
    let now = 1_000_000
    const { store } = await open(() => now)
    await store.write(async (w) => w.put(flag('old', 1))) // 1: never changed again
    await store.write(async (w) => w.put(flag('a', 1))) // 2
    await store.write(async (w) => w.put(flag('a', 2))) // 3
    await store.write(async (w) => w.put(flag('gone', 1))) // 4
    await store.write(async (w) => void (await w.delete('gone'))) // 5
    now += 10_000
    expect(await store.pruneHistory(5_000, 0)).toBe(3) // a's 2, gone's 4 and 5
    expect(await store.pruneChanges(5_000, 0)).toBe(0) // the rest are heads
    expect((await store.changesSince(0)).map((c) => c.revision)).toEqual([1, 3])
    expect((await store.loadAll()).rows.map((r) => [r.key, r.json])).toEqual([
      ['a', json('a', 2)],
      ['old', json('old', 1)],
    ])
  })
})
