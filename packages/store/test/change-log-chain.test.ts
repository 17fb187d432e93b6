import { TABLES } from '@flagsync/store'
import { describe, expect, it } from 'vitest'
import { flag, json, openWithMigrations, useTestDatabase } from './migration-harness.js'

describe.each(['sqlite', 'postgres'] as const)('the change log as a chain per record on %s', (dialect) => {
  const database = useTestDatabase(dialect)
  const open = (clock?: () => number) => database.open(clock)

  it('migrates a log written before 0003: rows, audit columns, history, before states and base lookups kept', async () => {
    const old = await openWithMigrations(database.url, 2)
    const row = (revision: number, key: string, data: string | null, scope = '') => ({
      revision,
      scope,
      key,
      data,
      created_at: 1000 + revision,
      actor: 'alice',
      declared_actor: null,
      source: 'sync',
      batch_id: `batch-${revision}`,
      op_index: revision % 2,
    })
    await old(TABLES.changes).insert([
      row(1, 'a', json('a', 1)),
      row(2, 'b', json('b', 1)),
      row(3, 'a', json('a', 2)),
      row(4, 'a', null),
      row(5, 'a', json('a', 3)),
      row(6, 'a', json('a', 9), 'env'),
      row(7, 'b', json('b', 2)),
    ])
    await old(TABLES.flags).insert([
      { scope: '', key: 'a', data: json('a', 3), revision: 5, updated_at: 1005 },
      { scope: '', key: 'b', data: json('b', 2), revision: 7, updated_at: 1007 },
      { scope: 'env', key: 'a', data: json('a', 9), revision: 6, updated_at: 1006 },
    ])
    await old(TABLES.meta).where('name', 'revision').update({ value: 7 })
    await old.destroy()

    const { db, store, audit } = await open()
    expect(await db.knex('flagsync_migrations').orderBy('id').pluck('name')).toContain('0003_change_log_chain')
    const log = await store.changesSince(0)
    expect(log.map((c) => [c.revision, c.scope, c.key, c.json])).toEqual([
      [1, '', 'a', json('a', 1)],
      [2, '', 'b', json('b', 1)],
      [3, '', 'a', json('a', 2)],
      [4, '', 'a', null],
      [5, '', 'a', json('a', 3)],
      [6, 'env', 'a', json('a', 9)],
      [7, '', 'b', json('b', 2)],
    ])
    // Each row points at its record's previous change (scopes kept apart, through the delete).
    const prev = await db.knex(TABLES.changes).orderBy('revision').select('revision', 'prev_revision')
    expect(prev.map((r) => [Number(r.revision), r.prev_revision === null ? null : Number(r.prev_revision)])).toEqual([
      [1, null],
      [2, null],
      [3, 1],
      [4, 3],
      [5, 4],
      [6, null],
      [7, 2],
    ])

    const history = await audit.history('a')
    expect(history.entries.map((e) => [e.revision, e.action, e.before, e.after])).toEqual([
      [5, 'create', null, flag('a', 3)],
      [4, 'delete', flag('a', 2), null],
      [3, 'update', flag('a', 1), flag('a', 2)],
      [1, 'create', null, flag('a', 1)],
    ])
    expect(history.entries[0]).toMatchObject({ actor: 'alice', source: 'sync', batchId: 'batch-5', operationIndex: 1 })
    expect((await audit.history('a', { scope: 'env' })).entries.map((e) => e.revision)).toEqual([6])
    expect((await audit.changes()).entries.map((e) => [e.revision, e.beforeKnown, e.before])).toEqual([
      [7, true, flag('b', 1)],
      [5, true, null],
      [4, true, flag('a', 2)],
      [3, true, flag('a', 1)],
      [2, true, null],
      [1, true, null],
    ])

    const states = await store.write(async (w) =>
      w.statesAt([
        ['a', 2],
        ['a', 4],
        ['a', 6],
        ['b', 6],
        ['b', 0],
      ]),
    )
    expect(Object.fromEntries(states.result)).toEqual({
      'a@2': { flag: flag('a', 1), known: true },
      'a@4': { flag: null, known: true },
      'a@6': { flag: flag('a', 3), known: true },
      'b@6': { flag: flag('b', 1), known: true },
      'b@0': { flag: null, known: true },
    })

    // New writes continue the migrated chains.
    await store.write(async (w) => w.put(flag('a', 4)))
    expect((await audit.history('a', { limit: 2 })).entries.map((e) => [e.revision, e.before])).toEqual([
      [8, flag('a', 3)],
      [5, null],
    ])
  })

  it('pages a record through deletes and re-creates, by cursor (its own or any revision) and since', async () => {
    const { store, audit } = await open()
    // a: 1 create, 3 update, 5 delete, 7 create, 9 delete; b fills the revisions between.
    for (let i = 1; i <= 9; i++) {
      await store.write(async (w) => {
        if (i % 2 === 0) w.put(flag('b', i))
        else if (i === 5 || i === 9) await w.delete('a')
        else w.put(flag('a', i))
      })
    }
    const all = await audit.history('a')
    expect(all.entries.map((e) => [e.revision, e.action])).toEqual([
      [9, 'delete'],
      [7, 'create'],
      [5, 'delete'],
      [3, 'update'],
      [1, 'create'],
    ])
    expect(all.nextCursor).toBeNull()
    const first = await audit.history('a', { limit: 2 })
    expect(first.entries.map((e) => e.revision)).toEqual([9, 7])
    expect(first.nextCursor).toBe(7)
    const second = await audit.history('a', { limit: 2, cursor: 7 })
    expect(second.entries.map((e) => e.revision)).toEqual([5, 3])
    expect(second.nextCursor).toBe(3)
    expect((await audit.history('a', { limit: 2, cursor: 3 })).entries.map((e) => e.revision)).toEqual([1])
    // A cursor that is not one of a's revisions (b's 6, or beyond the log) still pages below it.
    expect((await audit.history('a', { cursor: 6 })).entries.map((e) => e.revision)).toEqual([5, 3, 1])
    expect((await audit.history('a', { cursor: 100, limit: 1 })).entries.map((e) => e.revision)).toEqual([9])
    expect((await audit.history('a', { since: 3 })).entries.map((e) => e.revision)).toEqual([9, 7, 5])
    expect((await audit.history('a', { since: 3, cursor: 9 })).entries.map((e) => e.revision)).toEqual([7, 5])
    expect((await audit.history('nope')).entries).toEqual([])
    // Both scopes at once, merged newest first.
    await store.write(async (w) => w.put(flag('a', 10)), 'env')
    expect((await audit.history('a', { scopes: ['', 'env'], limit: 3 })).entries.map((e) => e.revision)).toEqual([
      10, 9, 7,
    ])
  })

  it('pages the changes of several scopes merged newest first, each read in index order', async () => {
    const { store, audit } = await open()
    const scopes = ['', 'env', 'other', 'env', '', 'env'] // revisions 1..6
    for (const [i, scope] of scopes.entries()) await store.write(async (w) => w.put(flag(`k${i}`, i)), scope)
    const first = await audit.changes({ scopes: ['', 'env'], limit: 3 })
    expect(first.entries.map((e) => [e.revision, e.scope])).toEqual([
      [6, 'env'],
      [5, ''],
      [4, 'env'],
    ])
    expect(first.nextCursor).toBe(4)
    const second = await audit.changes({ scopes: ['', 'env'], limit: 3, cursor: 4 })
    expect(second.entries.map((e) => e.revision)).toEqual([2, 1])
    expect(second.nextCursor).toBeNull()
    expect((await audit.changes({ scopes: ['env', 'env'], since: 2 })).entries.map((e) => e.revision)).toEqual([6, 4])
    expect((await audit.changes({ scopes: [] })).entries).toEqual([])
  })

  it('pruneHistory drops superseded rows by the chain and keeps every record’s latest state', async () => {
    let now = 1_000_000
    const { store, audit } = await open(() => now)
    await store.write(async (w) => w.put(flag('a', 1))) // 1
    await store.write(async (w) => w.put(flag('b', 1))) // 2
    await store.write(async (w) => w.put(flag('a', 2))) // 3
    await store.write(async (w) => w.delete('b')) // 4
    await store.write(async (w) => w.put(flag('c', 1))) // 5
    now += 10_000
    await store.write(async (w) => w.put(flag('c', 2))) // 6, too new to prune
    // 1 (superseded by 3), 2 (superseded by the delete) and the delete 4 go; 3 and 5 stay.
    expect(await store.pruneHistory(5_000, 0)).toBe(3)
    expect((await store.changesSince(0)).map((c) => c.revision)).toEqual([3, 5, 6])
    const states = await store.write(async (w) =>
      w.statesAt([
        ['a', 4],
        ['c', 5],
        ['b', 2],
      ]),
    )
    expect(Object.fromEntries(states.result)).toEqual({
      'a@4': { flag: flag('a', 2), known: true },
      'c@5': { flag: flag('c', 1), known: true },
      'b@2': { flag: null, known: false },
    })
    // c's first row has no previous one, but the pruned part of the log might have held it: unknown.
    expect((await audit.history('c')).entries.map((e) => [e.revision, e.beforeKnown])).toEqual([
      [6, true],
      [5, false],
    ])
    expect((await audit.history('a')).entries.map((e) => [e.revision, e.beforeKnown])).toEqual([[3, false]])
  })
})
