import {
  type Checked,
  type Database,
  type FlagChangeKind,
  type FlagModel,
  FlagStore,
  type FlagWriteIntent,
  type FlagWriteRules,
  openDatabase,
  patchedFields,
  shapeWrite,
  writeFlagChange,
} from '@flagsync/store'
import { createTestDatabase, type TestDatabase } from '@flagsync/test-support/databases'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'

/** A small model: a flag is `{key, n, note?}`; a null in a patch removes `note`. */
interface Toy {
  key: string
  n: number
  note?: string
  [field: string]: unknown
}
const refuse = (message: string): Checked<never> => ({
  ok: false,
  invalid: { message, issues: [{ path: 'n', message }], stage: 'input' },
})
const model: FlagModel<Toy> = {
  parse: (record, key) => {
    const r = record as Partial<Toy>
    return typeof r.n === 'number' ? { ok: true, value: { ...r, key } as Toy } : refuse('n must be a number')
  },
  merge: (current, patch) => {
    const merged: Record<string, unknown> = { ...current, ...(patch as object) }
    for (const [field, value] of Object.entries(merged)) if (value === null) delete merged[field]
    return typeof merged.n === 'number' ? { ok: true, value: merged as Toy } : refuse('n must be a number')
  },
}

describe('shapeWrite (pure)', () => {
  const current: Toy = { key: 'a', n: 1, note: 'x' }

  it('a put creates or replaces, and sets its whole flag', () => {
    const put: FlagWriteIntent = { action: 'put', key: 'a', record: { n: 2 } }
    expect(shapeWrite(put, undefined, model)).toEqual({
      ok: true,
      kind: 'create',
      candidate: { key: 'a', n: 2 },
      sets: { key: 'a', n: 2 },
    })
    expect(shapeWrite(put, current, model)).toMatchObject({ ok: true, kind: 'replace', candidate: { key: 'a', n: 2 } })
  })

  it('a patch sets its fields as merged (a removed field is absent); of a missing flag, as sent', () => {
    const patch: FlagWriteIntent = { action: 'patch', key: 'a', patch: { n: 5, note: null, key: 'a', revision: 9 } }
    expect(shapeWrite(patch, current, model)).toEqual({
      ok: true,
      kind: 'patch',
      candidate: { key: 'a', n: 5, revision: 9 },
      sets: { n: 5, note: undefined },
      patch: { n: 5, note: null, key: 'a', revision: 9 },
    })
    expect(shapeWrite(patch, undefined, model)).toMatchObject({
      ok: true,
      candidate: undefined,
      sets: { n: 5, note: null },
    })
  })

  it('an invalid record or patch is refused before anything is read', () => {
    expect(shapeWrite({ action: 'put', key: 'a', record: { n: 'x' } }, undefined, model)).toEqual(
      refuse('n must be a number'),
    )
    expect(shapeWrite({ action: 'patch', key: 'a', patch: { n: null } }, current, model)).toEqual(
      refuse('n must be a number'),
    )
  })

  it('a delete sets nothing', () => {
    expect(shapeWrite({ action: 'delete', key: 'a' }, current, model)).toEqual({
      ok: true,
      kind: 'delete',
      candidate: null,
      sets: null,
    })
  })

  it('patchedFields ignores key and revision, and anything that is not an object', () => {
    expect(patchedFields({ key: 'a', revision: 3, n: 1 }, undefined)).toEqual({ n: 1 })
    expect(patchedFields('nope', undefined)).toEqual({})
  })
})

describe.each(['sqlite', 'postgres'] as const)('writeFlagChange on %s', (dialect) => {
  let testDb: TestDatabase
  let db: Database
  let store: FlagStore
  beforeEach(async () => {
    testDb = await createTestDatabase(dialect)
    db = await openDatabase(testDb.url)
    store = new FlagStore(db)
    await store.write(async (w) => w.put({ key: 'a', n: 1 }))
  })
  afterEach(async () => {
    await db.close()
    await testDb.drop()
  })

  const write = (intent: FlagWriteIntent, rules: Partial<FlagWriteRules<Toy>> = {}) =>
    store.write((w) => writeFlagChange(w, '', intent, { model, ...rules }))

  it('applies, answering the flag as committed before', async () => {
    const { result, changes } = await write({ action: 'patch', key: 'a', patch: { n: 2 } })
    expect(result).toMatchObject({
      status: 'applied',
      kind: 'patch',
      flag: { key: 'a', n: 2 },
      before: { flag: { key: 'a', n: 1 }, revision: 1 },
    })
    expect(changes.map((c) => c.revision)).toEqual([2])
  })

  it('a stale base is a conflict before the flag is found missing', async () => {
    await store.write(async (w) => w.delete('a'))
    const { result } = await write({ action: 'patch', key: 'a', patch: { n: 2 }, base: 1 })
    expect(result).toMatchObject({ status: 'conflict', conflict: { kind: 'deleted', fields: ['n'] } })
    expect((await write({ action: 'patch', key: 'a', patch: { n: 2 } })).result.status).toBe('not_found')
    expect((await write({ action: 'delete', key: 'a' })).result.status).toBe('not_found')
  })

  it('a current base costs no query: the store revision is the one the write lock read', async () => {
    const queries: string[] = []
    const record = (q: { sql: string }) => queries.push(q.sql)
    db.knex.on('query', record)
    const patch = async (n: number, base?: number) => {
      queries.length = 0
      const { result } = await write({
        action: 'patch',
        key: 'a',
        patch: { n },
        ...(base === undefined ? {} : { base }),
      })
      return { status: result.status, queries: [...queries] }
    }
    const plain = await patch(2)
    // The store's newest revision is now 2: a base of 2 is current, 3 was never issued (record-level: a conflict).
    expect(await patch(3, 2)).toEqual({ status: 'applied', queries: plain.queries })
    expect((await patch(4, 4)).status).toBe('conflict')
    db.knex.off('query', record)
  })

  it('a write that changes nothing is answered before the gate and stages nothing', async () => {
    const gate = vi.fn(async () => 'review' as const)
    const { result, changes } = await write({ action: 'put', key: 'a', record: { n: 1 } }, { gate })
    expect(result).toMatchObject({ status: 'unchanged', before: { revision: 1 } })
    expect(gate).not.toHaveBeenCalled()
    expect(changes).toEqual([])
  })

  it('the gate refuses before the scope is checked; the scope refuses before a patch is sent for review', async () => {
    const fits = vi.fn(async () => ({ message: 'no', issues: [], stage: 'scope' as const }))
    const forbidden = await write(
      { action: 'delete', key: 'a' },
      { gate: async () => ({ forbidden: 'admins only' }), fits },
    )
    expect(forbidden.result).toEqual({ status: 'forbidden', key: 'a', reason: 'admins only' })
    expect(fits).not.toHaveBeenCalled()
    const unfit = await write({ action: 'patch', key: 'a', patch: { n: 3 } }, { gate: async () => 'review', fits })
    expect(unfit.result).toMatchObject({ status: 'invalid', stage: 'scope', message: 'no' })
    expect(unfit.changes).toEqual([])
  })

  it('review: nothing staged, the validated patch and the revision it was sent against', async () => {
    const kinds: FlagChangeKind[] = []
    const gate = async (kind: FlagChangeKind) => {
      kinds.push(kind)
      return kind === 'patch' ? ('review' as const) : ('apply' as const)
    }
    const { result, changes } = await write({ action: 'patch', key: 'a', patch: { n: 4 } }, { gate })
    expect(result).toMatchObject({ status: 'needs_approval', patch: { n: 4 }, flag: { n: 4 }, before: { revision: 1 } })
    expect(changes).toEqual([])
    await write({ action: 'put', key: 'b', record: { n: 1 } }, { gate })
    await write({ action: 'put', key: 'a', record: { n: 9 } }, { gate })
    await write({ action: 'delete', key: 'a' }, { gate })
    expect(kinds).toEqual(['patch', 'create', 'replace', 'delete'])
  })

  it('a blind put stages without reading the flag: applied, and written as an upsert (FlagWriter.changes)', async () => {
    const { result, changes } = await write({ action: 'put', key: 'a', record: { n: 1 } }, { blindPut: true })
    expect(result).toMatchObject({ status: 'applied', before: null })
    expect(changes.map((c) => c.flag)).toEqual([{ key: 'a', n: 1 }])
    // With a gate the flag is read: the same put is then unchanged.
    const gated = await write(
      { action: 'put', key: 'a', record: { n: 1 } },
      { blindPut: true, gate: async () => 'apply' },
    )
    expect(gated.result.status).toBe('unchanged')
  })
})
