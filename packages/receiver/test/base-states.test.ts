import { type Collection, detectConflict, flagsCollection } from '@flagsync/receiver'
import { type FlagStore, MAX_STEPS_UNDER_LOCK, META, type StoredFlag, TABLES } from '@flagsync/store'
import { DIALECTS } from '@flagsync/test-support/databases'
import fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { batch, fullFlag, type Harness, insert, remove, startHarness, update } from './harness.js'

/**
 * The three-way check reads every base state of a batch in bulk (before the write lock, one walk
 * per record); these tests hold it to the documented rules (`detectConflict` against the change
 * log as written) for random histories, prunes and batches with shared and differing bases.
 */

type Step =
  | { kind: 'put'; key: number; enabled: boolean; rollout: number }
  | { kind: 'set'; key: number; field: 'description' | 'rollout_percentage'; value: number }
  | { kind: 'delete'; key: number }
  | { kind: 'prune'; mode: 'history' | 'changes'; keepLast: number }

interface PlannedOp {
  key: number
  action: 'insert' | 'update' | 'delete'
  field: 'description' | 'rollout_percentage' | 'is_enabled'
  value: number
  /** Picks the base among the key's logged revisions (±1), or past the store's newest revision. */
  base: number
}

const KEYS = 4
const stepArb: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant('put' as const),
      key: fc.nat(KEYS - 1),
      enabled: fc.boolean(),
      rollout: fc.nat(3),
    }),
  },
  {
    weight: 6,
    arbitrary: fc.record({
      kind: fc.constant('set' as const),
      key: fc.nat(KEYS - 1),
      field: fc.constantFrom('description' as const, 'rollout_percentage' as const),
      value: fc.nat(3),
    }),
  },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('delete' as const), key: fc.nat(KEYS - 1) }) },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('prune' as const),
      mode: fc.constantFrom('history' as const, 'changes' as const),
      keepLast: fc.nat(4),
    }),
  },
)
const opArb: fc.Arbitrary<PlannedOp> = fc.record({
  key: fc.nat(KEYS - 1),
  action: fc.constantFrom('insert' as const, 'update' as const, 'update' as const, 'delete' as const),
  field: fc.constantFrom('description' as const, 'rollout_percentage' as const, 'is_enabled' as const),
  value: fc.nat(3),
  base: fc.nat(40),
})

/** Every change-log row ever written, oldest first: the history the documented rules speak of. */
interface Logged {
  revision: number
  key: string
  flag: StoredFlag | null
}

describe.each(DIALECTS)('bulk base states on %s', (dialect) => {
  let h: Harness
  let now = 1_000_000
  let run = 0
  beforeAll(async () => {
    h = await startHarness({ dialect, storeOptions: { clock: () => now } })
  })
  afterAll(async () => {
    await h?.close()
  })

  const logged: Logged[] = []
  async function record(): Promise<void> {
    const after = logged.at(-1)?.revision ?? 0
    for (const c of await h.store.changesSince(after, 100_000))
      logged.push({ revision: c.revision, key: c.key, flag: c.flag })
  }
  const meta = async (name: string) =>
    Number((await h.db.knex(TABLES.meta).where('name', name).first('value'))?.value ?? 0)

  async function applyStep(step: Step, keys: string[]): Promise<void> {
    now += 1000
    if (step.kind === 'prune') {
      if (step.mode === 'history') await h.store.pruneHistory(500, step.keepLast)
      else await h.store.pruneChanges(500, step.keepLast)
      return
    }
    const key = keys[step.key] as string
    const current = (await h.store.get(key)) !== undefined
    const op =
      step.kind === 'delete'
        ? remove(key)
        : step.kind === 'set' && current
          ? update(key, { [step.field]: step.field === 'description' ? `d${step.value}` : step.value * 10 })
          : insert(key, fullFlag(key, { is_enabled: step.kind === 'put' && step.enabled, rollout_percentage: 5 }))
    expect((await h.post(batch([op]))).status).toBe(200)
    await record()
  }

  /** The batch's operations (updates only of flags that exist, nothing after a delete) with their bases. */
  function plan(ops: PlannedOp[], keys: string[], exists: Set<string>, storeRevision: number) {
    const deleted = new Set<string>()
    const planned: Array<{
      op: Record<string, unknown>
      key: string
      base: number
      action: PlannedOp['action']
      sets: Record<string, unknown> | null
    }> = []
    for (const p of ops) {
      const key = keys[p.key] as string
      if (deleted.has(key) || (p.action === 'update' && !exists.has(key))) continue
      const history = logged.filter((l) => l.key === key).map((l) => l.revision)
      const choices = [
        ...history,
        ...history.map((r) => r - 1),
        ...history.map((r) => r + 1),
        storeRevision + 1 + (p.base % 2),
      ]
      const base = Math.max(0, choices[p.base % choices.length] as number)
      const value =
        p.field === 'description' ? `mine${p.value}` : p.field === 'is_enabled' ? p.value % 2 === 0 : p.value * 10 + 1
      if (p.action === 'delete') {
        deleted.add(key)
        planned.push({ op: remove(key), key, base, action: 'delete', sets: null })
      } else if (p.action === 'update') {
        planned.push({ op: update(key, { [p.field]: value }), key, base, action: 'update', sets: { [p.field]: value } })
      } else {
        const record = fullFlag(key, { [p.field]: value })
        planned.push({ op: insert(key, record), key, base, action: 'insert', sets: record })
      }
    }
    return planned
  }

  /** The documented state of `key` at `revision`: its newest logged change at or before it, if the log still holds it. */
  function stateAt(key: string, revision: number, surviving: Set<number>, prunedThrough: number, prefixPruned: number) {
    const newest = logged.filter((l) => l.key === key && l.revision <= revision).at(-1)
    if (newest && surviving.has(newest.revision)) return { record: newest.flag, known: true }
    return { record: null, known: revision >= prunedThrough && prefixPruned === 0 }
  }

  it('answers every batch as detectConflict does over the change log as written (fast-check)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(stepArb, { minLength: 1, maxLength: 10 }),
        fc.array(opArb, { minLength: 1, maxLength: 24 }),
        async (steps, ops) => {
          const keys = Array.from({ length: KEYS }, (_, i) => `r${++run}-k${i}`)
          for (const step of steps) await applyStep(step, keys)
          const storeRevision = await meta('revision')
          const [prunedThrough, prefixPruned] = [await meta(META.prunedThrough), await meta(META.prefixPrunedThrough)]
          const surviving = new Set((await h.store.changesSince(0, 1_000_000)).map((c) => c.revision))
          const committed = new Map((await h.store.loadAll('')).rows.map((r) => [r.key, r]))
          const planned = plan(ops, keys, new Set(committed.keys()), storeRevision)
          if (planned.length === 0) return
          const expected = planned.flatMap((p, index) => {
            const current = committed.get(p.key)
            const unissued = p.base > storeRevision
            const base = unissued
              ? { record: null, known: false }
              : stateAt(p.key, p.base, surviving, prunedThrough, prefixPruned)
            const verdict = detectConflict({
              action: p.action,
              sets: p.sets,
              baseRevision: p.base,
              base,
              current: current?.flag ?? null,
              currentRevision: current?.revision ?? null,
              storeRevision,
            })
            if (verdict.outcome !== 'conflict') return []
            const { outcome: _, ...conflict } = verdict
            return [
              {
                operationIndex: index,
                collection: 'flags',
                recordId: p.key,
                ...conflict,
                base: base.record,
                current: current?.flag ?? null,
                currentRevision: current?.revision ?? null,
              },
            ]
          })
          // The same pairs through the writer inside a transaction (no read before the lock): the same states.
          const pairs = planned.filter((p) => p.base <= storeRevision).map((p) => [p.key, p.base] as const)
          const inLock = await h.store.write(async (w) => w.statesAt(pairs))
          for (const [key, base] of pairs) {
            const want = stateAt(key, base, surviving, prunedThrough, prefixPruned)
            expect(inLock.result.get(`${key}@${base}`)).toEqual({ flag: want.record, known: want.known })
          }
          const res = await h.post(batch(planned.map((p) => ({ ...p.op, baseRevision: p.base }))))
          if (expected.length > 0) {
            expect(res.status, JSON.stringify(res.body).slice(0, 400)).toBe(409)
            expect(res.body.conflicts).toEqual(expected)
          } else {
            expect(res.status, JSON.stringify(res.body).slice(0, 400)).toBe(200)
            await record()
          }
        },
      ),
      { numRuns: dialect === 'sqlite' ? 40 : 15 },
    )
  }, 180_000)
})

async function revisionsOf(store: FlagStore, keys: string[]): Promise<Map<string, number>> {
  const wanted = new Set(keys)
  return new Map((await store.loadAll('')).rows.filter((r) => wanted.has(r.key)).map((r) => [r.key, r.revision]))
}

/** Rows a query handed back, whatever the driver's shape. */
const rowCount = (response: unknown) =>
  Array.isArray(response)
    ? response.length
    : Array.isArray((response as { rows?: unknown[] })?.rows)
      ? (response as { rows: unknown[] }).rows.length
      : 0

describe.each(DIALECTS)('a 1 000-operation batch with stale bases on %s', (dialect) => {
  // Records changed a few times since their base are walked under the lock, a bounded walk; records changed more
  // often than that are walked outside it, and the batch applies in a second pass that reads no history.
  it.each([
    { changes: 3, passes: 1 },
    { changes: MAX_STEPS_UNDER_LOCK + 2, passes: 2 },
  ])(
    'reads its base states in a fixed number of statements, one walk per record ($changes changes since each base)',
    async ({ changes, passes }) => {
      const h = await startHarness({ dialect })
      try {
        const keys = Array.from({ length: 100 }, (_, i) => `bulk-${i}`)
        expect((await h.post(batch(keys.map((k) => insert(k, fullFlag(k)))))).status).toBe(200)
        const bases = await revisionsOf(h.store, keys)
        for (let round = 1; round <= changes; round++) {
          expect((await h.post(batch(keys.map((k) => update(k, { rollout_percentage: round }))))).status).toBe(200)
        }
        // Ten operations per flag, all on the revision before those changes: 1 000 conflicts.
        const operations = Array.from({ length: 1000 }, (_, i) => {
          const key = keys[i % keys.length] as string
          return { ...update(key, { rollout_percentage: 50 + (i % 7) }), baseRevision: bases.get(key) }
        })
        const statements: Array<{ sql: string; __knexTxId?: string }> = []
        let rows = 0
        const onQuery = (query: { sql: string; __knexTxId?: string }) => statements.push(query)
        const onResponse = (response: unknown) => {
          rows += rowCount(response)
        }
        h.db.knex.on('query', onQuery).on('query-response', onResponse)
        const res = await h.post(batch(operations)).finally(() => {
          h.db.knex.off('query', onQuery).off('query-response', onResponse)
        })
        expect(res.status).toBe(409)
        expect(res.body.conflicts).toHaveLength(1000)
        expect(res.body.conflicts[999]).toMatchObject({
          recordId: 'bulk-99',
          kind: 'field',
          fields: ['rollout_percentage'],
        })
        expect(res.body.conflicts[999].base).toEqual(fullFlag('bulk-99'))
        // A constant, not one per operation or per record.
        expect(statements.length, statements.map((q) => q.sql.slice(0, 60)).join('\n')).toBeLessThanOrEqual(24)
        // Shared pairs are read once: about one row per record, not per operation.
        expect(rows).toBeLessThanOrEqual(1000)
        // The write transactions (those recording the batch id): at most one bounded walk under the lock, and none
        // in the pass that follows a read outside it.
        const writes = [
          ...new Set(
            statements.filter((q) => /insert into [`"]?flagsync_batches/i.test(q.sql)).map((q) => q.__knexTxId),
          ),
        ]
        expect(writes).toHaveLength(passes)
        for (const [pass, tx] of writes.entries()) {
          const underLock = statements.filter((q) => q.__knexTxId === tx)
          const walks = underLock.filter((q) => /with recursive/i.test(q.sql))
          expect(walks).toHaveLength(pass === 0 ? 1 : 0)
          expect(underLock.length, underLock.map((q) => q.sql.slice(0, 50)).join('\n')).toBeLessThanOrEqual(10)
        }
      } finally {
        await h.close()
      }
    },
    60_000,
  )
})

describe.each(DIALECTS)('writes committed between the read of the bases and the lock, on %s', (dialect) => {
  it('are seen: a record changed meanwhile and a base issued meanwhile are read under the lock', async () => {
    let meanwhile: (store: FlagStore) => Promise<void> = async () => {}
    const flags: Collection = {
      ...flagsCollection,
      async prefetch(store, bases) {
        const states = await flagsCollection.prefetch?.(store, bases)
        await meanwhile(store)
        return states
      },
    }
    const h = await startHarness({ dialect, collections: { flags } })
    try {
      expect((await h.post(batch(['a', 'b', 'c', 'd'].map((k) => insert(k, fullFlag(k)))))).status).toBe(200)
      const before = await revisionsOf(h.store, ['a', 'b', 'c', 'd'])
      // d changed more often since its base than a walk under the lock may go: its base states are read outside it.
      for (let i = 0; i <= MAX_STEPS_UNDER_LOCK; i++) {
        expect((await h.post(batch([update('d', { description: `x${i}` })]))).status).toBe(200)
      }
      const read = Number((await h.db.knex(TABLES.meta).where('name', 'revision').first('value')).value)
      // After the bases were read: a changes (revision read + 1), then b (read + 2).
      meanwhile = async (store) => {
        meanwhile = async () => {}
        await store.write(async (w) => w.put(fullFlag('a', { description: 'theirs' })))
        await store.write(async (w) => w.put(fullFlag('b', { description: 'theirs' })))
      }
      const res = await h.post(
        batch([
          { ...update('a', { description: 'mine' }), baseRevision: before.get('a') },
          // Not yet issued when the bases were read; b's state there is its first one.
          { ...update('b', { description: 'mine' }), baseRevision: read + 1 },
          { ...update('c', { description: 'mine' }), baseRevision: before.get('c') },
          { ...update('d', { rollout_percentage: 5 }), baseRevision: before.get('d') },
        ]),
      )
      expect(res.status, JSON.stringify(res.body)).toBe(409)
      expect(res.body.conflicts).toEqual([
        expect.objectContaining({
          recordId: 'a',
          kind: 'field',
          fields: ['description'],
          base: fullFlag('a'),
          currentRevision: read + 1,
        }),
        expect.objectContaining({
          recordId: 'b',
          kind: 'field',
          fields: ['description'],
          base: fullFlag('b'),
          currentRevision: read + 2,
        }),
      ])
      expect(res.body.conflicts[0].current).toEqual(fullFlag('a', { description: 'theirs' }))
    } finally {
      await h.close()
    }
  })
})
