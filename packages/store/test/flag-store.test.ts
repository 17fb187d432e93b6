import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import {
  ChangeFeed,
  type Database,
  type FlagChange,
  FlagStore,
  LiveFlagSet,
  openDatabase,
  StoreError,
  TABLES,
} from '@flagsync/store'
import { createTestDatabase, type TestDatabase } from '@flagsync/test-support/databases'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'

let dir: string
let url: string
const opened: Database[] = []

async function open(): Promise<FlagStore> {
  const db = await openDatabase(url)
  opened.push(db)
  return new FlagStore(db)
}

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'flagsync-store-'))
  url = `sqlite:${join(dir, 'flags.sqlite')}`
})
afterEach(async () => {
  await Promise.all(opened.splice(0).map((db) => db.close()))
  rmSync(dir, { recursive: true, force: true })
})

const flag = (key: string, enabled = true) => ({ key, is_enabled: enabled })

describe('FlagStore', () => {
  it('writes flags with consecutive revisions and reads them back after reopening', async () => {
    const store = await open()
    const { changes } = await store.write(async (w) => {
      w.put(flag('a'))
      w.put(flag('b'))
    })
    expect(changes.map((c) => [c.revision, c.key])).toEqual([
      [1, 'a'],
      [2, 'b'],
    ])
    await store.db.close()
    opened.pop()
    const reopened = await open()
    const { revision, rows } = await reopened.loadAll()
    expect(revision).toBe(2)
    expect(rows.map((r) => r.flag)).toEqual([flag('a'), flag('b')])
  })

  it('keeps only the net change per key and drops create-then-delete', async () => {
    const store = await open()
    await store.write(async (w) => w.put(flag('kept')))
    const { changes } = await store.write(async (w) => {
      w.put(flag('kept', false))
      w.put(flag('temp'))
      await w.delete('temp')
      await w.delete('never-existed')
    })
    expect(changes).toHaveLength(1)
    expect(changes[0]?.flag).toEqual(flag('kept', false))
  })

  it('orders changes of one transaction by the first time each key was touched', async () => {
    const store = await open()
    const { changes } = await store.write(async (w) => {
      w.put(flag('a'))
      w.put(flag('b'))
      w.put(flag('a', false))
    })
    expect(changes.map((c) => [c.revision, c.key, c.flag?.is_enabled])).toEqual([
      [1, 'a', false],
      [2, 'b', true],
    ])
  })

  it('prunes old change-log entries but always keeps the newest ones', async () => {
    let now = 1_000_000
    const db = await openDatabase(url)
    opened.push(db)
    const store = new FlagStore(db, { clock: () => now })
    // One record changed five times: rows 1-4 are history, 5 its stored state.
    for (let i = 0; i < 5; i++) await store.write(async (w) => w.put(flag('k', i % 2 === 0)))
    now += 10_000
    expect(await store.pruneChanges(5_000, 2)).toBe(3)
    expect((await store.changesSince(0)).map((c) => c.revision)).toEqual([4, 5])
    expect(await store.oldestRevision()).toBe(4)
  })

  it('rolls back everything when the callback throws, passing its error through', async () => {
    const store = await open()
    const boom = new Error('invalid operation')
    await expect(
      store.write(async (w) => {
        w.put(flag('a'))
        throw boom
      }),
    ).rejects.toBe(boom)
    expect((await store.loadAll()).rows).toEqual([])
    expect(await store.changesSince(0)).toEqual([])
  })

  it('turns a disk-full failure at commit into a retryable StoreError and applies nothing', async () => {
    const db = await openDatabase(url)
    opened.push(db)
    const store = new FlagStore(db, {
      beforeCommit: () => {
        throw Object.assign(new Error('SQLITE_FULL: database or disk is full'), { code: 'SQLITE_FULL' })
      },
    })
    const error = await store.write(async (w) => w.put(flag('a'))).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(StoreError)
    expect((error as StoreError).code).toBe('unavailable')
    expect((await store.loadAll()).rows).toEqual([])
  })
})

describe('openDatabase', () => {
  it('lets several instances start on a fresh SQLite file at once', async () => {
    const dbs = await Promise.all(Array.from({ length: 4 }, () => openDatabase(url)))
    opened.push(...dbs)
    const store = new FlagStore(dbs[3] as Database)
    await store.write(async (w) => w.put(flag('a')))
    expect((await new FlagStore(dbs[0] as Database).loadAll()).rows).toHaveLength(1)
  })

  it('opens a file where two racing starts left knex two lock rows (once "already locked" forever)', async () => {
    const first = await openDatabase(url)
    await first.knex('flagsync_migrations_lock').insert({ is_locked: 0 })
    expect(await first.knex('flagsync_migrations_lock').count({ n: '*' })).toEqual([{ n: 2 }])
    await first.knex('flagsync_migrations').del()
    await first.knex.raw('drop view flagsync_flags') // a view of heads and the log since 0004
    await first.knex.schema.dropTable('flagsync_heads')
    await first.knex.schema.dropTable('flagsync_changes')
    await first.knex.schema.dropTable('flagsync_batches')
    await first.knex.schema.dropTable('flagsync_meta')
    await first.close()
    const db = await openDatabase(url)
    opened.push(db)
    expect(await db.knex('flagsync_migrations_lock').count({ n: '*' })).toEqual([{ n: 1 }])
    await new FlagStore(db).write(async (w) => w.put(flag('a')))
    expect((await new FlagStore(db).loadAll()).rows).toHaveLength(1)
  })

  // Four, not more: in one process every SQLite connection waits for a lock on
  // one of libuv's four threads, so a fifth would stall the lock holder for a
  // whole busy timeout (separate processes, the real case, do not share them).
  it('keeps one lock row when instances race on fresh files, round after round', async () => {
    for (let round = 0; round < 6; round++) {
      const fresh = `sqlite:${join(dir, `race-${round}.sqlite`)}`
      const dbs = await Promise.all(Array.from({ length: 4 }, () => openDatabase(fresh)))
      opened.push(...dbs)
      expect(await (dbs[0] as Database).knex('flagsync_migrations_lock').count({ n: '*' })).toEqual([{ n: 1 }])
      // One row per migration (four since 0004_flags_as_log_heads), none recorded twice.
      expect(await (dbs[3] as Database).knex('flagsync_migrations').count({ n: '*' })).toEqual([{ n: 4 }])
    }
  })

  it('rejects a DATABASE_URL it cannot use, naming the accepted forms', async () => {
    await expect(openDatabase('mysql://localhost/x')).rejects.toThrow(/sqlite: or postgres:\/\//)
  })
})

describe('ChangeFeed', () => {
  it('delivers changes written through another connection (another process) by polling, in order', async () => {
    const reader = await open()
    const writer = await open()
    const feed = new ChangeFeed(reader, { pollIntervalMs: 20 })
    const seen: FlagChange[] = []
    feed.onChanges((changes) => seen.push(...changes))
    await feed.start(0)
    await writer.write(async (w) => w.put(flag('a')))
    await writer.write(async (w) => {
      w.put(flag('b'))
      await w.delete('a')
    })
    await vi.waitFor(() => expect(seen.map((c) => c.revision)).toEqual([1, 2, 3]), { timeout: 2000 })
    expect(seen[2]?.flag).toBeNull()
    await feed.close()
  })

  it('applies in-process changes once even when the poll sees them too', async () => {
    const store = await open()
    const feed = new ChangeFeed(store, { pollIntervalMs: 5 })
    const live = new LiveFlagSet()
    const seen: number[] = []
    feed.onChanges((changes) => {
      for (const c of changes) {
        seen.push(c.revision)
        live.apply(c)
      }
    })
    await feed.start(0)
    for (let i = 0; i < 20; i++) {
      const { changes } = await store.write(async (w) => w.put(flag(`f${i}`)))
      await feed.ingest(changes)
    }
    await feed.catchUp()
    expect(seen).toEqual(Array.from({ length: 20 }, (_, i) => i + 1))
    expect(live.size()).toBe(20)
    expect(JSON.parse(live.serializedList().body.toString())).toHaveLength(20)
    await feed.close()
  })

  it('reloads when pruneHistory left a gap after a contiguous start (a pruned delete is not silently skipped)', async () => {
    let now = 1_000_000
    const db = await openDatabase(url)
    opened.push(db)
    const store = new FlagStore(db, { clock: () => now })
    await store.write(async (w) => w.put(flag('a'))) // 1
    const feed = new ChangeFeed(store, { pollIntervalMs: 0 })
    const seen: number[] = []
    let resets = 0
    feed.onChanges((changes) => seen.push(...changes.map((c) => c.revision)))
    feed.onReset(() => resets++)
    await feed.start(1) // it holds a
    await store.write(async (w) => w.put(flag('c'))) // 2
    await store.write(async (w) => w.delete('a')) // 3
    await store.write(async (w) => w.put(flag('d'))) // 4
    now += 10_000
    // a's create (superseded) and its delete go; c (2) stays as c's latest state, d (4) is newer than the cutoff.
    expect(await store.pruneHistory(5_000, 1)).toBe(2)
    expect((await store.changesSince(1)).map((c) => c.revision)).toEqual([2, 4])
    expect(await store.prunedThrough()).toBe(3)
    await feed.catchUp()
    // Emitting 2 and 4 would leave the follower holding the deleted a forever.
    expect(resets).toBe(1)
    expect(seen).toEqual([])
    expect(feed.revision).toBe(4)
    await feed.close()
  })

  it("pruneHistory keeps each record's latest state; pruneChanges drops the whole prefix but live records' heads", async () => {
    let now = 1_000_000
    const db = await openDatabase(url)
    opened.push(db)
    const store = new FlagStore(db, { clock: () => now })
    await store.write(async (w) => w.put(flag('a'))) // 1
    await store.write(async (w) => w.put(flag('b'))) // 2
    await store.write(async (w) => w.put(flag('b', false))) // 3
    now += 10_000
    expect(await store.pruneHistory(5_000, 0)).toBe(1)
    expect((await store.changesSince(0)).map((c) => c.revision)).toEqual([1, 3])
    const states = await store.write(async (w) =>
      w.statesAt([
        ['a', 2],
        ['b', 2],
        ['b', 3],
        ['nope', 3],
      ]),
    )
    expect(Object.fromEntries(states.result)).toEqual({
      'a@2': { flag: flag('a'), known: true }, // its row survived: exact
      'b@2': { flag: null, known: false }, // b's row 2 was pruned
      'b@3': { flag: flag('b', false), known: true },
      'nope@3': { flag: null, known: true }, // no row and nothing pruned could have held it: absent
    })
    await store.write(async (w) => w.put(flag('c'))) // 4
    await store.write(async (w) => void (await w.delete('c'))) // 5
    await store.write(async (w) => w.put(flag('a', false))) // 6
    now += 10_000
    // The whole prefix goes (a's superseded row 1, c's rows 4 and 5), except each live record's newest row:
    // it is the record's stored state (the flags view reads its JSON there).
    expect(await store.pruneChanges(5_000, 0)).toBe(3)
    expect((await store.changesSince(0)).map((c) => c.revision)).toEqual([3, 6])
    expect((await store.loadAll()).rows.map((r) => [r.key, r.json, r.revision])).toEqual([
      ['a', JSON.stringify(flag('a', false)), 6],
      ['b', JSON.stringify(flag('b', false)), 3],
    ])
    expect(await store.get('b')).toEqual(flag('b', false))
    const after = await store.write(async (w) => w.statesAt([['a', 3]]))
    expect(after.result.get('a@3')).toEqual({ flag: null, known: false })
  })
})

describe('ChangeFeed on PostgreSQL', () => {
  let pgDb: TestDatabase
  beforeEach(async () => {
    pgDb = await createTestDatabase('postgres')
  })
  afterEach(async () => {
    await Promise.all(opened.splice(0).map((db) => db.close()))
    await pgDb.drop()
  })

  it.each([
    ['LISTEN/NOTIFY (poll off)', { listen: true, pollIntervalMs: 0 }],
    ['the backstop poll alone (a missed notification)', { listen: false, pollIntervalMs: 20 }],
  ])("delivers another connection's commits through %s", async (_name, options) => {
    const readerDb = await openDatabase(pgDb.url)
    const writerDb = await openDatabase(pgDb.url)
    opened.push(readerDb, writerDb)
    const feed = new ChangeFeed(new FlagStore(readerDb), options)
    const seen: number[] = []
    feed.onChanges((changes) => seen.push(...changes.map((c) => c.revision)))
    await feed.start(0)
    const writer = new FlagStore(writerDb)
    await writer.write(async (w) => w.put(flag('a')))
    await writer.write(async (w) => w.put(flag('b')))
    await vi.waitFor(() => expect(seen).toEqual([1, 2]), { timeout: 2000 })
    await feed.close()
  })

  it('serializes concurrent writers so revisions commit in order', async () => {
    const dbs = await Promise.all([openDatabase(pgDb.url), openDatabase(pgDb.url), openDatabase(pgDb.url)])
    opened.push(...dbs)
    const stores = dbs.map((db) => new FlagStore(db))
    await Promise.all(
      Array.from({ length: 30 }, (_, i) => stores[i % 3]?.write(async (w) => w.put(flag(`k${i % 5}`, i % 2 === 0)))),
    )
    const changes = await stores[0]?.changesSince(0)
    expect(changes?.map((c) => c.revision)).toEqual(Array.from({ length: 30 }, (_, i) => i + 1))
    const { rows } = await (stores[0] as FlagStore).loadAll()
    // Each flag's stored revision is the last change-log entry for its key.
    for (const row of rows) {
      const last = changes?.filter((c) => c.key === row.key).at(-1)
      expect(row.revision).toBe(last?.revision)
    }
  })
})

describe.each(['sqlite', 'postgres'] as const)('the write path on %s', (dialect) => {
  let testDb: TestDatabase
  beforeEach(async () => {
    testDb = await createTestDatabase(dialect)
  })
  afterEach(async () => {
    await Promise.all(opened.splice(0).map((db) => db.close()))
    await testDb.drop()
  })

  async function openStore(): Promise<FlagStore> {
    const db = await openDatabase(testDb.url)
    opened.push(db)
    return new FlagStore(db)
  }

  it('stores and logs each flag as the exact JSON it streams, whatever the text', async () => {
    const store = await openStore()
    const odd = [
      'quotes " and \\ backslashes',
      'é 🚀 \u2028 \u007f',
      '\ud800 lone surrogate',
      '{"looks":"like json"}',
      'x'.repeat(20_000),
    ]
    const flags = odd.map((description, i) => ({
      key: `odd-${i}`,
      is_enabled: true,
      description,
      nested: { a: [1, null] },
    }))
    const { changes } = await store.write(async (w) => {
      for (const f of flags) w.put(f)
    })
    expect(changes.map((c) => c.json)).toEqual(flags.map((f) => JSON.stringify(f)))
    const { rows } = await store.loadAll('')
    expect(rows.map((r) => r.json)).toEqual(flags.map((f) => JSON.stringify(f)))
    expect((await store.changesSince(0)).map((c) => c.json)).toEqual(flags.map((f) => JSON.stringify(f)))
  })

  it('applies puts and deletes across scopes in one transaction, logging only net changes in order', async () => {
    const store = await openStore()
    await store.write(async (w) => {
      w.put(flag('a'))
      w.put(flag('b'))
      w.put(flag('a'), 'env-2')
    })
    const { changes } = await store.write(async (w) => {
      await w.load(['a', 'b', 'missing'])
      expect(await w.get('a')).toEqual(flag('a'))
      expect(await w.get('missing')).toBeUndefined()
      w.put(flag('c'))
      await w.delete('a')
      w.put(flag('b', false))
      w.put(flag('temp'), 'env-2')
      await w.delete('temp', 'env-2') // created and deleted: no change
      w.put(flag('gone'), 'env-2')
      await w.delete('a', 'env-2')
    })
    expect(changes.map((c) => [c.revision, c.scope, c.key, c.flag?.is_enabled ?? null])).toEqual([
      [4, '', 'c', true],
      [5, '', 'a', null],
      [6, '', 'b', false],
      [7, 'env-2', 'gone', true],
      [8, 'env-2', 'a', null],
    ])
    const { revision, rows } = await store.loadAll()
    expect(revision).toBe(8)
    expect(rows.map((r) => [r.scope, r.key, r.revision])).toEqual([
      ['', 'b', 6],
      ['', 'c', 4],
      ['env-2', 'gone', 7],
    ])
    expect((await store.changesSince(3)).map((c) => c.revision)).toEqual([4, 5, 6, 7, 8])
  })

  it('logs a write of more rows than one statement binds (SQLite: 4 000 per insert) with one chain per record', async () => {
    const store = await openStore()
    const first = await store.write(async (w) => {
      for (let i = 0; i < 4500; i++) w.put(flag(`k${i}`))
    })
    const before = new Map(first.changes.map((c) => [c.key, c.revision]))
    // 9 000 rows: 36 000 bound values in one statement would pass SQLite's 32 766-variable limit.
    const { changes } = await store.write(
      async (w) => {
        for (let i = 0; i < 9000; i++) w.put(flag(`k${i}`, i % 2 === 0))
      },
      '',
      { actor: 'bulk', source: 'test', batchId: 'big' },
    )
    expect(changes.map((c) => c.revision)).toEqual(Array.from({ length: 9000 }, (_, i) => 4501 + i))
    const { revision, rows } = await store.loadAll('')
    expect(revision).toBe(13_500)
    expect(rows).toHaveLength(9000)
    const logged = await store.db
      .knex(TABLES.changes)
      .where('revision', '>', 4500)
      .orderBy('revision')
      .select('revision', 'key', 'data', 'prev_revision', 'actor', 'batch_id')
    expect(logged).toHaveLength(9000)
    for (const [i, row] of logged.entries()) {
      expect(Number(row.revision)).toBe(4501 + i)
      expect(row.key).toBe(`k${i}`)
      expect(row.data).toBe(JSON.stringify(flag(`k${i}`, i % 2 === 0)))
      expect(row.prev_revision === null ? null : Number(row.prev_revision)).toBe(before.get(`k${i}`) ?? null)
      expect([row.actor, row.batch_id]).toEqual(['bulk', 'big'])
    }
  })
})
