import { AuditLog, auditEntryToWire, type Database, FlagStore, openDatabase, TABLES } from '@flagsync/store'
import { createTestDatabase, type TestDatabase } from '@flagsync/test-support/databases'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'

const flag = (key: string, enabled = true) => ({ key, is_enabled: enabled })

describe.each(['sqlite', 'postgres'] as const)('a change with its own audit context on %s', (dialect) => {
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

  const logged = (after: number) =>
    db
      .knex(TABLES.changes)
      .where('revision', '>', after)
      .orderBy('revision')
      .select('key', 'data', 'actor', 'declared_actor', 'source', 'batch_id', 'op_index')

  it('records each change under the context it was staged in, the write’s for the rest, in one transaction', async () => {
    await store.write(async (w) => w.put(flag('gone')))
    const write = { actor: 'service', declaredActor: 'cron', source: 'batch-job', batchId: 'b-1' }
    const { changes } = await store.write(
      async (w) => {
        w.put(flag('plain'))
        await w.withAudit({ actor: 'ann', source: 'schedule:12' }, async () => {
          w.put(flag('ann-1'))
          await w.withAudit({ actor: 'cat', source: 'schedule:14' }, async () => w.put(flag('cat-1')))
          w.put(flag('ann-2'))
        })
        await w.withAudit({ actor: 'bob', source: 'schedule:13 approved by dan' }, async () => {
          await w.delete('gone')
        })
        w.put(flag('plain-2'))
      },
      '',
      write,
    )
    expect(changes.map((c) => [c.key, c.audit?.actor ?? null])).toEqual([
      ['plain', null],
      ['ann-1', 'ann'],
      ['cat-1', 'cat'],
      ['ann-2', 'ann'],
      ['gone', 'bob'],
      ['plain-2', null],
    ])
    const rows = (await logged(1)).map((r) => [r.key, r.actor, r.declared_actor, r.source, r.batch_id])
    expect(rows).toEqual([
      ['plain', 'service', 'cron', 'batch-job', 'b-1'],
      ['ann-1', 'ann', null, 'schedule:12', null],
      ['cat-1', 'cat', null, 'schedule:14', null],
      ['ann-2', 'ann', null, 'schedule:12', null],
      ['gone', 'bob', null, 'schedule:13 approved by dan', null],
      ['plain-2', 'service', 'cron', 'batch-job', 'b-1'],
    ])
    const history = await new AuditLog(db).history('gone')
    expect(history.entries.map((e) => auditEntryToWire(e).source)).toEqual([
      {
        type: 'schedule',
        id: 13,
        createdBy: { name: 'bob', verified: true },
        approvedBy: { name: 'dan', verified: true },
      },
      null,
    ])
  })

  it('takes the context of the last staging of a record, and keeps one context per write without any', async () => {
    const { changes } = await store.write(
      async (w) => {
        await w.withAudit({ actor: 'ann' }, async () => w.put(flag('twice', false)))
        w.put(flag('twice'))
        await w.withAudit({ actor: 'bob' }, async () => w.put(flag('again', false)))
        await w.withAudit({ actor: 'cat' }, async () => w.put(flag('again')))
      },
      '',
      { actor: 'service' },
    )
    expect(changes.map((c) => c.audit)).toEqual([undefined, { actor: 'cat' }])
    expect((await logged(0)).map((r) => [r.key, r.actor])).toEqual([
      ['twice', 'service'],
      ['again', 'cat'],
    ])
    const plain = await store.write(
      async (w) => {
        w.put(flag('one'))
        w.put(flag('two'))
      },
      '',
      { actor: 'solo', source: 'api:PUT /api/flags/:key' },
    )
    expect(plain.changes.every((c) => !('audit' in c))).toBe(true)
    expect((await logged(2)).map((r) => [r.key, r.actor, r.source])).toEqual([
      ['one', 'solo', 'api:PUT /api/flags/:key'],
      ['two', 'solo', 'api:PUT /api/flags/:key'],
    ])
  })

  it('appends more rows with their own contexts than one SQLite statement binds, each with its JSON and chain', async () => {
    const count = 4100
    await store.write(async (w) => w.put(flag('k0', false)))
    const { changes } = await store.write(async (w) => {
      for (let i = 0; i < count; i++) {
        await w.withAudit({ actor: `a${i}`, source: `schedule:${i}` }, async () => w.put(flag(`k${i}`)))
      }
    })
    expect(changes.map((c) => c.revision)).toEqual(Array.from({ length: count }, (_, i) => i + 2))
    const rows = await db
      .knex(TABLES.changes)
      .where('revision', '>', 1)
      .orderBy('revision')
      .select('key', 'data', 'actor', 'source', 'prev_revision')
    expect(rows).toHaveLength(count)
    for (const [i, row] of rows.entries()) {
      expect([row.key, row.data, row.actor, row.source]).toEqual([
        `k${i}`,
        JSON.stringify(flag(`k${i}`)),
        `a${i}`,
        `schedule:${i}`,
      ])
      expect(row.prev_revision === null ? null : Number(row.prev_revision)).toBe(i === 0 ? 1 : null)
    }
  })
})
