import { type Database, FlagStore, openDatabase, TABLES } from '@flagsync/store'
import { createTestDatabase, type TestDatabase } from '@flagsync/test-support/databases'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'

describe.each(['sqlite', 'postgres'] as const)('a write that changes nothing on %s', (dialect) => {
  let testDb: TestDatabase
  let db: Database
  let store: FlagStore
  beforeEach(async () => {
    testDb = await createTestDatabase(dialect)
    db = await openDatabase(testDb.url)
    store = new FlagStore(db)
  })
  afterEach(async () => {
    await db.close()
    await testDb.drop()
  })

  const logRows = async () => Number((await db.knex(TABLES.changes).count({ n: '*' }).first())?.n)

  it('records nothing when a read flag is put back as it is, in any key order', async () => {
    await store.write(async (w) => w.put({ key: 'a', is_enabled: true, rules: [{ v: 1 }], description: 'x' }))
    const before = await logRows()
    const { changes, result } = await store.write(async (w) => {
      const committed = await w.committed('a')
      w.put({ description: 'x', rules: [{ v: 1 }], is_enabled: true, key: 'a', note: undefined })
      return committed.revision
    })
    expect(changes).toEqual([])
    expect(result).toBe(1)
    expect(await logRows()).toBe(before)
    expect((await store.loadAll()).revision).toBe(1)
  })

  it('still writes a real change, and a change made then undone within the transaction is none', async () => {
    await store.write(async (w) => {
      w.put({ key: 'a', is_enabled: true })
      w.put({ key: 'b', is_enabled: true })
    })
    const { changes } = await store.write(async (w) => {
      await w.load(['a', 'b'])
      w.put({ key: 'a', is_enabled: false })
      w.put({ key: 'b', is_enabled: false })
      w.put({ key: 'b', is_enabled: true })
    })
    expect(changes.map((c) => [c.revision, c.key, c.flag?.is_enabled])).toEqual([[3, 'a', false]])
  })

  it('writes a blind upsert (a key never read) even when it matches: no read is added to that path', async () => {
    await store.write(async (w) => w.put({ key: 'a', is_enabled: true }))
    const { changes } = await store.write(async (w) => w.put({ key: 'a', is_enabled: true }))
    expect(changes.map((c) => c.revision)).toEqual([2])
  })

  it('decides on the committed flag also when the key is read after the put', async () => {
    await store.write(async (w) => w.put({ key: 'a', is_enabled: true }))
    const { changes } = await store.write(async (w) => {
      w.put({ key: 'a', is_enabled: true })
      await w.committed('a')
    })
    expect(changes).toEqual([])
  })
})
