import type { Operation } from '@flagsync/protocol'
import { Dexie } from 'dexie'
import { IDBFactory, IDBKeyRange } from 'fake-indexeddb'
import fc from 'fast-check'
import { afterEach, describe, expect, it } from 'vitest'
import { loadLazyOps } from '../src/lazy.js'
import { OutboxDb } from '../src/outbox-db.js'
import { existenceAfter, type RemoteRow, recordKey } from '../src/outbox-schema.js'
import { filterOf } from '../src/remote-filter.js'
import { FOLD_MIN_ROWS, ROW_KEYS, recordDelivered } from '../src/remote-records.js'
import { harness, ModelReceiver, useMockServer } from './helpers.js'

// Which records exist at the receiver is recorded as one `remoteKeys` row per acknowledged batch (not one row per
// record), folded now and then. Compaction must decide exactly as it did with one row per record.

const server = useMockServer()
// The lookup and the fold are part of the lazy chunk (lazy-ops.ts).
const { filterMayHold, foldRemote, remoteAmong } = await loadLazyOps()
let h = harness()
afterEach(async () => {
  await h.closeAll()
  h = harness()
})

const key = (recordId: string) => recordKey({ collection: 'c', recordId })
const ins = (recordId: string): Operation => ({ action: 'insert', collection: 'c', recordId, record: { v: 1 } })
const upd = (recordId: string): Operation => ({ action: 'update', collection: 'c', recordId, changes: { v: 2 } })
const del = (recordId: string): Operation => ({ action: 'delete', collection: 'c', recordId })

function useReceiver(): ModelReceiver {
  const r = new ModelReceiver()
  server.use(r.handler)
  return r
}

/** A second connection to the harness's database, for looking at `remoteKeys`. */
async function remoteTable<T>(read: (store: OutboxDb) => Promise<T>): Promise<T> {
  const store = new OutboxDb('flagsync', { indexedDB: h.indexedDB, IDBKeyRange })
  try {
    return await read(store)
  } finally {
    store.close()
  }
}

const rowsOf = (store: OutboxDb): Promise<RemoteRow[]> => store.db.remoteKeys.toArray()

describe('remote existence, one row per acknowledged batch', () => {
  it('records each delivered batch as one row (what it leaves existing, what it deletes) and reads it back', async () => {
    useReceiver()
    const client = h.client({ batchSize: 10 })
    await client.insert('c', { v: 1 }, { recordId: 'a' })
    await client.insert('c', { v: 1 }, { recordId: 'b' })
    await client.update('c', 'u', { v: 1 })
    await client.flush()
    await client.delete('c', 'b')
    await client.update('c', 'a', { v: 2 })
    await client.flush()
    const { rows, remote } = await remoteTable(async (store) => ({
      rows: await rowsOf(store),
      remote: await remoteAmong(store.db, [key('a'), key('b'), key('u'), key('never')]),
    }))
    expect(rows.map(({ keys, gone }) => ({ keys, gone }))).toEqual([
      { keys: [key('a'), key('b'), key('u')], gone: [] },
      { keys: [key('a')], gone: [key('b')] },
    ])
    expect([...remote].sort()).toEqual([key('a'), key('u')])
  })

  it("a row's filter holds every key it names, and few others", () => {
    const keys = Array.from({ length: ROW_KEYS }, (_, i) => key(`in${i}`))
    const filter = filterOf({ keys: keys.slice(1), gone: keys.slice(0, 1) })
    expect(keys.every((k) => filterMayHold(filter, k))).toBe(true)
    const others = Array.from({ length: 20_000 }, (_, i) => key(`out${i}`))
    expect(others.filter((k) => filterMayHold(filter, k)).length).toBeLessThan(others.length / 100)
    expect(filterMayHold(filterOf({ keys: [], gone: [] }), key('x'))).toBe(false)
  })

  it('a batch of more than ROW_KEYS records takes a row per ROW_KEYS of them', async () => {
    const store = new OutboxDb('rows', { indexedDB: new IDBFactory(), IDBKeyRange })
    try {
      const ops = Array.from({ length: ROW_KEYS + 3 }, (_, i) => (i === 1 ? del(`r${i}`) : ins(`r${i}`)))
      expect(await recordDelivered(store.db, ops)).toBe(2)
      const rows = await rowsOf(store)
      expect(rows.map((r) => [r.keys.length, r.gone])).toEqual([
        [ROW_KEYS, []],
        [2, [key('r1')]],
      ])
      const remote = await remoteAmong(store.db, [key('r0'), key('r1'), key(`r${ROW_KEYS + 2}`)])
      expect([...remote].sort()).toEqual([key('r0'), key(`r${ROW_KEYS + 2}`)])
    } finally {
      store.close()
    }
  })
})

describe('the compaction decision is unchanged', () => {
  it('insert … delete of a delivered record sends the delete; of a never-delivered record it cancels out', async () => {
    const r = useReceiver()
    const client = h.client({ batchSize: 10 })
    await client.insert('c', { v: 1 }, { recordId: 'sent' })
    await client.insert('c', { v: 1 }, { recordId: 'other' })
    await client.flush()
    for (const id of ['sent', 'never']) {
      await client.insert('c', { v: 2 }, { recordId: id })
      await client.delete('c', id)
    }
    expect(await client.pending()).toBe(1)
    await client.flush()
    expect(r.requests.map((q) => q.operations)).toEqual([[ins('sent'), ins('other')], [del('sent')]])
    expect([...r.records.keys()]).toEqual(['c/other'])
  })

  it('… also once the rows were folded, and a delivered delete makes it cancel again', async () => {
    const r = useReceiver()
    const client = h.client({ batchSize: 1 })
    const n = FOLD_MIN_ROWS + 6
    for (let i = 0; i < n; i++) await client.insert('c', { v: 1 }, { recordId: `r${i}` })
    await client.flush()
    await client.delete('c', 'r5')
    await client.flush()
    const rows = await remoteTable(rowsOf)
    expect(rows.length).toBeLessThan(FOLD_MIN_ROWS) // folded once past FOLD_MIN_ROWS
    expect(rows.flatMap((row) => row.keys)).toHaveLength(n) // every delivered record, once (r5 in the fold)
    r.requests.length = 0
    for (const id of ['r3', 'r5', 'never']) {
      await client.insert('c', { v: 2 }, { recordId: id })
      await client.delete('c', id)
    }
    expect(await client.pending()).toBe(1)
    await client.flush()
    expect(r.requests.map((q) => q.operations)).toEqual([[del('r3')]])
  })
})

describe('folding', () => {
  const recordIds = ['a', 'b', 'c', 'd', 'e', 'f']
  const operation = fc
    .record({ action: fc.constantFrom('insert', 'update', 'delete'), id: fc.constantFrom(...recordIds) })
    .map(({ action, id }) => (action === 'insert' ? ins(id) : action === 'update' ? upd(id) : del(id)))
  const step = fc.record({ batch: fc.array(operation, { maxLength: 6 }), fold: fc.boolean() })

  it('answers every lookup as the last delivered operation of the record says, before and after folds (property)', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(step, { maxLength: 30 }), async (steps) => {
        const store = new OutboxDb('fold', { indexedDB: new IDBFactory(), IDBKeyRange })
        const { db } = store
        const delivered: Operation[] = []
        try {
          for (const { batch, fold } of steps) {
            await db.transaction('rw', db.remoteKeys, db.remoteFilters, async () => await recordDelivered(db, batch))
            delivered.push(...batch)
            if (fold) {
              const left = await db.transaction('rw', db.remoteKeys, db.remoteFilters, async () => await foldRemote(db))
              const rows = await rowsOf(store)
              expect(rows).toHaveLength(left)
              // After a fold: no deleted record kept, each record at most once.
              expect(rows.every((row) => row.gone.length === 0)).toBe(true)
              const keys = rows.flatMap((row) => row.keys)
              expect(new Set(keys).size).toBe(keys.length)
            }
            const exists = existenceAfter(delivered)
            const expected = recordIds.map(key).filter((k) => exists.get(k) === true)
            expect([...(await remoteAmong(db, recordIds.map(key)))].sort()).toEqual(expected)
          }
        } finally {
          store.close()
        }
      }),
      { numRuns: 60 },
    )
  })

  it('keeps full rows whose facts are all current as they are, and repacks the rest', async () => {
    const store = new OutboxDb('repack', { indexedDB: new IDBFactory(), IDBKeyRange })
    const { db } = store
    try {
      const full = Array.from({ length: ROW_KEYS }, (_, i) => ins(`full${i}`))
      await recordDelivered(db, full)
      for (let i = 0; i < 10; i++) await recordDelivered(db, [ins(`small${i}`), ins('again')])
      await recordDelivered(db, [del('small0')])
      const [first] = await rowsOf(store)
      expect(await db.transaction('rw', db.remoteKeys, db.remoteFilters, async () => await foldRemote(db))).toBe(2)
      const rows = await rowsOf(store)
      expect(rows[0]).toEqual(first) // untouched
      expect([...(rows[1]?.keys ?? [])].sort()).toEqual(
        ['again', ...Array.from({ length: 9 }, (_, i) => `small${i + 1}`)].map(key),
      )
      // Nothing to fold: nothing is written.
      expect(await db.transaction('rw', db.remoteKeys, db.remoteFilters, async () => await foldRemote(db))).toBe(2)
      expect(await rowsOf(store)).toEqual(rows)
    } finally {
      store.close()
    }
  })
})

describe('filters, built in the lazy chunk', () => {
  const filterIds = (store: OutboxDb) => store.db.remoteFilters.toCollection().primaryKeys()

  it('reads rows filed with their filter by earlier versions and rows without one alike; a read-write lookup files the missing filters', async () => {
    const store = new OutboxDb('mixed', { indexedDB: new IDBFactory(), IDBKeyRange })
    const { db } = store
    try {
      // As earlier versions recorded acknowledgements: each row with its filter, under the same id.
      for (const row of [
        { keys: [key('a'), key('b'), key('c')], gone: [] },
        { keys: [key('e')], gone: [key('b')] },
      ]) {
        const id = await db.remoteKeys.add(row)
        await db.remoteFilters.add({ id, bits: filterOf(row) })
      }
      // Acknowledgements now: rows only.
      await db.transaction('rw', db.remoteKeys, db.remoteFilters, async () => {
        await recordDelivered(db, [del('a'), ins('d')])
        await recordDelivered(db, [ins('b'), del('e')])
      })
      expect(await db.remoteKeys.count()).toBe(4)
      expect(await filterIds(store)).toEqual([1, 2])

      const asked = ['a', 'b', 'c', 'd', 'e', 'never'].map(key)
      const expected = [key('b'), key('c'), key('d')]
      // A read-only lookup (the pending count) answers the same and writes nothing.
      const readOnly = await db.transaction('r', db.remoteKeys, db.remoteFilters, () => remoteAmong(db, asked))
      expect([...readOnly].sort()).toEqual(expected)
      expect(await filterIds(store)).toEqual([1, 2])
      // A read-write lookup (a cut) files the filters of the rows it had to read.
      const readWrite = await db.transaction('rw', db.remoteKeys, db.remoteFilters, () => remoteAmong(db, asked))
      expect([...readWrite].sort()).toEqual(expected)
      const rows = await rowsOf(store)
      const filters = await db.remoteFilters.toArray()
      expect(filters.map((f) => [f.id, [...f.bits]])).toEqual(rows.map((row) => [row.id, [...filterOf(row)]]))
      expect([...(await remoteAmong(db, asked))].sort()).toEqual(expected)

      // A fold leaves every row with its filter, and the same answers.
      await recordDelivered(db, [ins('f')])
      await db.transaction('rw', db.remoteKeys, db.remoteFilters, () => foldRemote(db))
      expect(await filterIds(store)).toEqual((await rowsOf(store)).map((row) => row.id))
      expect([...(await remoteAmong(db, [...asked, key('f')]))].sort()).toEqual([...expected, key('f')])
    } finally {
      store.close()
    }
  })

  it('a fold files the filters of the full rows it keeps as they are', async () => {
    const store = new OutboxDb('fold-filters', { indexedDB: new IDBFactory(), IDBKeyRange })
    const { db } = store
    try {
      await recordDelivered(
        db,
        Array.from({ length: ROW_KEYS }, (_, i) => ins(`full${i}`)),
      )
      await recordDelivered(db, [ins('x')])
      await recordDelivered(db, [del('x'), ins('y')])
      expect(await db.transaction('rw', db.remoteKeys, db.remoteFilters, () => foldRemote(db))).toBe(2)
      const [full, rest] = await rowsOf(store)
      expect(full?.keys).toHaveLength(ROW_KEYS)
      expect(rest?.keys).toEqual([key('y')])
      const filters = await db.remoteFilters.toArray()
      expect(filters.map((f) => [f.id, [...f.bits]])).toEqual(
        [full, rest].map((row) => [row?.id, [...filterOf(row as RemoteRow)]]),
      )
    } finally {
      store.close()
    }
  })
})

describe('upgrading from one remoteRecords row per record (schema version 1)', () => {
  it('keeps every record an earlier version knew to exist remotely', async () => {
    const r = useReceiver()
    // The database as version 1 of the client left it.
    const old = new Dexie('flagsync', { indexedDB: h.indexedDB, IDBKeyRange })
    old.version(1).stores({
      ops: '++id',
      batches: '++seq, &batchId',
      tombstones: 'key',
      remoteRecords: 'key',
      lease: 'name',
      deadLetters: '++id, batchId',
    })
    const known = ROW_KEYS + 20
    await old.table('remoteRecords').bulkPut(Array.from({ length: known }, (_, i) => ({ key: key(`r${i}`) })))
    await old.table('ops').bulkAdd([ins('r7'), del('r7'), ins('new'), del('new')].map((op) => ({ op, queuedAt: 1 })))
    old.close()

    const client = h.client({ batchSize: 10 })
    expect(await client.pending()).toBe(1) // r7 exists remotely: its delete stays; 'new' cancels out
    await client.flush()
    expect(r.requests.map((q) => q.operations)).toEqual([[del('r7')]])

    const raw = new Dexie('flagsync', { indexedDB: h.indexedDB, IDBKeyRange })
    await raw.open()
    try {
      expect(raw.verno).toBe(3)
      expect(raw.tables.map((t) => t.name)).not.toContain('remoteRecords')
      const rows = (await raw.table('remoteKeys').toArray()) as RemoteRow[]
      // The migrated records in rows of ROW_KEYS, then the delivered batch's row.
      expect(rows.map((row) => [row.keys.length, row.gone.length])).toEqual([
        [ROW_KEYS, 0],
        [known - ROW_KEYS, 0],
        [0, 1],
      ])
      expect(new Set(rows.flatMap((row) => row.keys))).toEqual(
        new Set(Array.from({ length: known }, (_, i) => key(`r${i}`))),
      )
    } finally {
      raw.close()
    }
    const remote = await remoteTable((store) => remoteAmong(store.db, [key('r0'), key('r7'), key(`r${known - 1}`)]))
    expect([...remote].sort()).toEqual([key('r0'), key(`r${known - 1}`)])
  })
})
