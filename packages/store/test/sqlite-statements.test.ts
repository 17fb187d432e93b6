import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { FlagStore, openDatabase } from '@flagsync/store'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'

const flag = (key: string, n: number) => ({ key, n })

describe('SQLite write statements prepared once per connection', () => {
  let dir: string
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'flagsync-statements-'))
  })
  afterEach(() => rmSync(dir, { recursive: true, force: true }))

  it('writes batches of many sizes (statements evicted and finalized), then closes the file cleanly', async () => {
    const file = join(dir, 'flags.sqlite')
    const db = await openDatabase(`sqlite:${file}`)
    const store = new FlagStore(db)
    // 30 distinct row counts: more change-log statements than the cache keeps.
    for (let size = 1; size <= 30; size++) {
      const { changes } = await store.write(async (w) => {
        for (let i = 0; i < size; i++) w.put(flag(`k${i}`, size))
        if (size % 3 === 0) await w.delete('k0') // an existing flag: a delete instead of its put
      })
      expect(changes.length).toBe(size)
    }
    const before = await store.loadAll()
    await db.close()
    // SQLite refuses to close a connection with unfinalized statements: the WAL file would stay behind.
    expect(existsSync(`${file}-wal`)).toBe(false)

    const again = await openDatabase(`sqlite:${file}`)
    try {
      const after = await new FlagStore(again).loadAll()
      expect(after).toEqual(before)
      expect(after.revision).toBe((30 * 31) / 2)
      expect(after.rows.map((r) => [r.key, r.flag])).toEqual(
        Array.from({ length: 29 }, (_, i) => [`k${i + 1}`, flag(`k${i + 1}`, 30)]).sort(([a], [b]) =>
          String(a).localeCompare(String(b)),
        ),
      )
    } finally {
      await again.close()
    }
  })

  it('a failing statement rolls the write back and the next write on the same connection works', async () => {
    const db = await openDatabase(`sqlite:${join(dir, 'flags.sqlite')}`)
    try {
      const store = new FlagStore(db)
      await store.write(async (w) => w.put(flag('a', 1)))
      // The heads upsert (a prepared statement) fails for this key.
      await db.knex.raw(
        `create trigger refuse_b before insert on flagsync_heads when new.key = 'b' begin select raise(abort, 'no b'); end`,
      )
      await expect(store.write(async (w) => w.put(flag('b', 1)))).rejects.toMatchObject({ code: 'conflict' })
      await db.knex.raw('drop trigger refuse_b')
      const { changes } = await store.write(async (w) => w.put(flag('b', 2)))
      expect(changes.map((c) => [c.revision, c.key])).toEqual([[2, 'b']])
      expect((await store.loadAll()).rows.map((r) => [r.key, r.flag])).toEqual([
        ['a', flag('a', 1)],
        ['b', flag('b', 2)],
      ])
    } finally {
      await db.close()
    }
  })
})
