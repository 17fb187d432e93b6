import type { Operation } from '@flagsync/protocol'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { compact, compactRecord } from '../src/index.js'

const ins = (recordId: string, record: Record<string, unknown>, collection = 'c'): Operation => ({
  action: 'insert',
  collection,
  recordId,
  record,
})
const upd = (recordId: string, changes: Record<string, unknown>, collection = 'c'): Operation => ({
  action: 'update',
  collection,
  recordId,
  changes,
})
const del = (recordId: string, collection = 'c'): Operation => ({ action: 'delete', collection, recordId })

describe('compact: the rules', () => {
  it('insert then update becomes one insert with the merged record', () => {
    expect(compact([ins('1', { a: 1, b: 1 }), upd('1', { b: 2, c: 3 })])).toEqual([ins('1', { a: 1, b: 2, c: 3 })])
  })

  it('several updates become one update with merged changes (later fields win)', () => {
    expect(compact([upd('1', { a: 1 }), upd('1', { b: 2 }), upd('1', { a: 3 })])).toEqual([upd('1', { a: 3, b: 2 })])
  })

  it('merges a long run of updates in queue order, past the merge scratch space, over many collections', () => {
    const ops: Operation[] = [ins('1', { n: -1 })]
    for (let i = 0; i < 300; i++) ops.push(upd('1', { n: i, [`f${i}`]: i }), upd(`x${i}`, { i }, `col${i % 9}`))
    const out = compact(ops)
    const expected: Record<string, unknown> = { n: 299 }
    for (let i = 0; i < 300; i++) expected[`f${i}`] = i
    expect(out[0]).toEqual(ins('1', expected))
    expect(out).toHaveLength(301)
    expect(out.slice(1)).toEqual(ops.filter((op) => op.recordId !== '1'))
  })

  it('insert then delete cancels out', () => {
    expect(compact([ins('1', { a: 1 }), upd('1', { a: 2 }), del('1')])).toEqual([])
  })

  it('update then delete becomes the delete', () => {
    expect(compact([upd('1', { a: 1 }), del('1')])).toEqual([del('1')])
  })

  it('delete then insert becomes the insert', () => {
    expect(compact([del('1'), ins('1', { a: 1 })])).toEqual([ins('1', { a: 1 })])
  })

  it('delete, insert, delete still sends a delete (the record may have existed before)', () => {
    expect(compact([del('1'), ins('1', { a: 1 }), del('1')])).toEqual([del('1')])
    expect(compact([upd('1', { a: 1 }), ins('1', { a: 2 }), del('1')])).toEqual([del('1')])
  })

  it('insert, delete, insert sends the last insert', () => {
    expect(compact([ins('1', { a: 1 }), del('1'), ins('1', { b: 2 })])).toEqual([ins('1', { b: 2 })])
  })

  it('a later insert replaces earlier updates', () => {
    expect(compact([upd('1', { a: 1 }), ins('1', { b: 2 }), upd('1', { c: 3 })])).toEqual([ins('1', { b: 2, c: 3 })])
  })

  it('keeps records in order of first appearance and separates collections', () => {
    const out = compact([
      upd('2', { a: 1 }),
      ins('1', { a: 1 }),
      upd('1', { a: 1 }, 'other'),
      upd('2', { b: 1 }),
      upd('1', { b: 1 }),
    ])
    expect(out).toEqual([upd('2', { a: 1, b: 1 }), ins('1', { a: 1, b: 1 }), upd('1', { a: 1 }, 'other')])
  })

  it('does not mutate its input', () => {
    const input = [ins('1', { a: 1 }), upd('1', { b: 2 }), upd('2', { a: 1 }), upd('2', { b: 1 })]
    const copy = structuredClone(input)
    compact(input)
    expect(input).toEqual(copy)
  })

  it('insert then delete still sends the delete when the record exists remotely', () => {
    const remote = (collection: string, recordId: string) => collection === 'c' && recordId === '1'
    expect(compact([ins('1', { a: 1 }), del('1'), ins('2', {}), del('2')], { existsRemotely: remote })).toEqual([
      del('1'),
    ])
    expect(compactRecord([ins('1', { a: 1 }), del('1')], true)).toEqual(del('1'))
  })

  it('compactRecord folds one record and returns null when it cancels out', () => {
    expect(compactRecord([])).toBeNull()
    expect(compactRecord([ins('1', { a: 1 }), del('1')])).toBeNull()
    expect(compactRecord([upd('1', { a: 1 }), upd('1', { a: 2 })])).toEqual(upd('1', { a: 2 }))
  })

  // Its speed and linearity are measured by `npm run bench` (compaction.ops_per_s, compaction.linearity), not here.
  it('folds a million operations into at most one per record, in order of first appearance', () => {
    const ops: Operation[] = []
    let seed = 1
    const rand = (n: number) => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff
      return seed % n
    }
    for (let i = 0; i < 1_000_000; i++) {
      const id = String(rand(10_000))
      const k = rand(10)
      ops.push(k === 0 ? del(id) : k === 1 ? ins(id, { v: i }) : upd(id, { [`f${k}`]: i }))
    }
    const out = compact(ops)
    const ids = out.map((op) => op.recordId)
    expect(new Set(ids).size).toBe(ids.length)
    expect(out.length).toBeLessThanOrEqual(10_000)
    const firstSeen = new Map<string, number>()
    for (const [i, op] of ops.entries()) if (!firstSeen.has(op.recordId)) firstSeen.set(op.recordId, i)
    const positions = ids.map((id) => firstSeen.get(id) as number)
    expect(positions).toEqual([...positions].sort((a, b) => a - b))
  })
})

// ---- property: the compacted queue leaves a receiver in the same state ----------

type Model = Map<string, Record<string, unknown>>
const keyOf = (op: Pick<Operation, 'collection' | 'recordId'>) => `${op.collection}/${op.recordId}`

/** The reference receiver: insert creates or replaces, update merges shallowly, delete removes (absent is fine). */
function applyStrict(state: Model, ops: readonly Operation[]): Model {
  const next = new Map(state)
  for (const op of ops) {
    const key = keyOf(op)
    if (op.action === 'insert') next.set(key, { ...op.record })
    else if (op.action === 'delete') next.delete(key)
    else {
      const existing = next.get(key)
      if (!existing) throw new Error(`update of missing ${key}`)
      next.set(key, { ...existing, ...op.changes })
    }
  }
  return next
}

/** Same, but an update of a missing record changes nothing (a receiver that ignores it). */
function applyLenient(state: Model, ops: readonly Operation[]): Model {
  const next = new Map(state)
  for (const op of ops) {
    const key = keyOf(op)
    if (op.action === 'insert') next.set(key, { ...op.record })
    else if (op.action === 'delete') next.delete(key)
    else {
      const existing = next.get(key)
      if (existing) next.set(key, { ...existing, ...op.changes })
    }
  }
  return next
}

const RECORDS = [
  ['flags', 'a'],
  ['flags', 'b'],
  ['flags', 'c'],
  ['todos', 'a'],
  ['todos', 'x'],
] as const
const payload = fc.dictionary(fc.constantFrom('p', 'q', 'r', 's'), fc.integer({ min: 0, max: 9 }), { maxKeys: 3 })
const step = fc.record({ rec: fc.nat({ max: RECORDS.length - 1 }), kind: fc.nat({ max: 2 }), data: payload })

/**
 * The initial receiver state. Compaction assumes (like the spec's rule "insert
 * then delete is never sent") that an insert which starts a record's queued
 * run creates the record, unless `existsRemotely` says otherwise: such
 * records start absent. Any other record may or may not exist.
 */
function initialState(raw: readonly Operation[], present: readonly boolean[], remote: readonly boolean[] = []): Model {
  const state: Model = new Map()
  const firsts = new Map<string, Operation>()
  for (const op of raw) if (!firsts.has(keyOf(op))) firsts.set(keyOf(op), op)
  RECORDS.forEach(([collection, recordId], i) => {
    const first = firsts.get(`${collection}/${recordId}`)
    const exists =
      first?.action === 'update' || ((first?.action !== 'insert' || remote[i] === true) && present[i] === true)
    if (exists) state.set(`${collection}/${recordId}`, { initial: i })
  })
  return state
}

/** `existsRemotely` for the records flagged in `remote`. */
function remoteLookup(remote: readonly boolean[]) {
  return (collection: string, recordId: string) =>
    RECORDS.some(([c, r], i) => c === collection && r === recordId && remote[i] === true)
}

/**
 * Raw queues the client accepts and the strict receiver can apply: no update
 * or delete after a queued delete (the client refuses those calls), and no
 * update of a record that does not exist (the receiver would reject the raw
 * queue itself). Invalid steps become inserts.
 */
function validQueue(
  steps: readonly { rec: number; kind: number; data: Record<string, number> }[],
  present: boolean[],
  remote: boolean[] = [],
) {
  const exists = new Map<number, boolean>()
  const lastWasDelete = new Map<number, boolean>()
  const raw: Operation[] = []
  for (const { rec, kind, data } of steps) {
    const [collection, recordId] = RECORDS[rec] as (typeof RECORDS)[number]
    const first = !exists.has(rec)
    if (first) exists.set(rec, kind === 0 && remote[rec] !== true ? false : kind === 1 || present[rec] === true)
    let action = (['insert', 'update', 'delete'] as const)[kind] ?? 'insert'
    if (lastWasDelete.get(rec) && action !== 'insert') action = 'insert'
    if (action === 'update' && !exists.get(rec)) action = 'insert'
    if (action === 'insert') raw.push({ action, collection, recordId, record: { ...data, id: recordId } })
    else if (action === 'update') raw.push({ action, collection, recordId, changes: data })
    else raw.push({ action, collection, recordId })
    exists.set(rec, action !== 'delete')
    lastWasDelete.set(rec, action === 'delete')
  }
  return raw
}

function firstAppearance(ops: readonly Operation[]): string[] {
  const seen: string[] = []
  for (const op of ops) if (!seen.includes(keyOf(op))) seen.push(keyOf(op))
  return seen
}

describe('compact: property against a model receiver', () => {
  const present = fc.array(fc.boolean(), { minLength: RECORDS.length, maxLength: RECORDS.length })

  it('valid queues: same final state, no new receiver errors, order of first appearance kept', () => {
    fc.assert(
      fc.property(fc.array(step, { maxLength: 60 }), present, present, (steps, initiallyPresent, remote) => {
        const raw = validQueue(steps, initiallyPresent, remote)
        const compacted = compact(raw, { existsRemotely: remoteLookup(remote) })
        const start = initialState(raw, initiallyPresent, remote)
        expect(applyStrict(start, compacted)).toEqual(applyStrict(start, raw))
        const keys = compacted.map(keyOf)
        expect(new Set(keys).size).toBe(keys.length)
        expect(keys).toEqual(firstAppearance(raw).filter((k) => keys.includes(k)))
        expect(compacted.length).toBeLessThanOrEqual(raw.length)
      }),
      { numRuns: 2000 },
    )
  })

  it('any queue (even ones the client refuses): same state for a receiver that ignores updates of missing records', () => {
    const anyOp = step.map(({ rec, kind, data }): Operation => {
      const [collection, recordId] = RECORDS[rec] as (typeof RECORDS)[number]
      if (kind === 0) return { action: 'insert', collection, recordId, record: data }
      if (kind === 1) return { action: 'update', collection, recordId, changes: data }
      return { action: 'delete', collection, recordId }
    })
    fc.assert(
      fc.property(fc.array(anyOp, { maxLength: 60 }), present, present, (raw, initiallyPresent, remote) => {
        const start = initialState(raw, initiallyPresent, remote)
        const compacted = compact(raw, { existsRemotely: remoteLookup(remote) })
        expect(applyLenient(start, compacted)).toEqual(applyLenient(start, raw))
      }),
      { numRuns: 2000 },
    )
  })

  it('is idempotent', () => {
    fc.assert(
      fc.property(fc.array(step, { maxLength: 60 }), present, (steps, p) => {
        const once = compact(validQueue(steps, p))
        expect(compact(once)).toEqual(once)
      }),
    )
  })
})

describe('compact: agrees with the one-record fold', () => {
  const anyOp = step.map(({ rec, kind, data }): Operation => {
    const [collection, recordId] = RECORDS[rec] as (typeof RECORDS)[number]
    if (kind === 0) return { action: 'insert', collection, recordId, record: data }
    if (kind === 1) return { action: 'update', collection, recordId, changes: data }
    return { action: 'delete', collection, recordId }
  })

  // compactRecord finds the last insert or delete and merges the updates after it once: this pins it to the plain
  // operation-by-operation fold it replaced (kept here as the model), field order and the `__proto__` field included.
  it('compactRecord equals folding the record one operation at a time', () => {
    const withBase = fc
      .tuple(anyOp, fc.option(fc.integer({ min: 0, max: 9 }), { nil: undefined }))
      .map(([op, base]): Operation => (base === undefined ? op : { ...op, baseRevision: base }))
    const proto = fc.constant(JSON.parse('{"__proto__": {"polluted": true}}') as Record<string, unknown>)
    const protoUpdate = proto.map(
      (changes): Operation => ({ action: 'update', collection: 'c', recordId: '1', changes }),
    )
    const run = fc.array(fc.oneof({ weight: 9, arbitrary: withBase }, { weight: 1, arbitrary: protoUpdate }), {
      maxLength: 30,
    })
    fc.assert(
      fc.property(run, fc.boolean(), (mixed, remote) => {
        const ops = mixed.map((op) => ({ ...op, collection: 'c', recordId: '1' }))
        const before = structuredClone(ops)
        const got = compactRecord(ops, remote)
        const want = foldRecord(ops, remote)
        expect(JSON.stringify(got)).toBe(JSON.stringify(want))
        expect(got).toEqual(want)
        const fields = (o: Operation | null) =>
          o === null || o.action === 'delete' ? null : o.action === 'insert' ? o.record : o.changes
        const proto = (o: Operation | null) => {
          const f = fields(o)
          return f === null ? null : Object.getPrototypeOf(f)
        }
        expect(proto(got)).toBe(proto(want))
        expect(ops).toEqual(before)
      }),
      { numRuns: 3000 },
    )
  })

  it('equals compactRecord of each record, in order of first appearance, without touching its input', () => {
    fc.assert(
      fc.property(fc.array(anyOp, { maxLength: 80 }), (raw) => {
        const before = structuredClone(raw)
        const expected = firstAppearance(raw)
          .map((key) => compactRecord(raw.filter((op) => keyOf(op) === key)))
          .filter((op) => op !== null)
        expect(compact(raw)).toEqual(expected)
        expect(raw).toEqual(before)
      }),
      { numRuns: 2000 },
    )
  })

  // The first four collections are searched in a short array, the rest in a Map: queues over more collections,
  // interleaved in any order, compact exactly as per record.
  it('equals compactRecord of each record over more collections than the short lookup holds', () => {
    const manyCollections = fc
      .tuple(anyOp, fc.nat({ max: 6 }))
      .map(([op, c]): Operation => ({ ...op, collection: `col${c}` }))
    fc.assert(
      fc.property(fc.array(manyCollections, { maxLength: 120 }), (raw) => {
        const expected = firstAppearance(raw)
          .map((key) => compactRecord(raw.filter((op) => keyOf(op) === key)))
          .filter((op) => op !== null)
        expect(compact(raw)).toEqual(expected)
      }),
      { numRuns: 1000 },
    )
  })

  // compact() keeps each record's state in typed arrays rather than folding operation objects: this pins it to the
  // fold with everything that state carries (remote existence, first baseRevision, runs that cancel and restart),
  // field order of what it builds included.
  it('equals compactRecord per record with existsRemotely and baseRevision, field order included', () => {
    const withBase = fc
      .tuple(anyOp, fc.option(fc.integer({ min: 0, max: 9 }), { nil: undefined }))
      .map(([op, base]): Operation => (base === undefined ? op : { ...op, baseRevision: base }))
    const remoteKeys = fc.subarray(RECORDS.map(([collection, recordId]) => `${collection}/${recordId}`))
    fc.assert(
      fc.property(fc.array(withBase, { maxLength: 80, size: 'max' }), remoteKeys, (raw, remote) => {
        const exists = new Set(remote)
        const asked: string[] = []
        const out = compact(raw, {
          existsRemotely: (collection, recordId) => {
            asked.push(`${collection}/${recordId}`)
            return exists.has(`${collection}/${recordId}`)
          },
        })
        const keys = firstAppearance(raw)
        const expected = keys
          .map((key) =>
            compactRecord(
              raw.filter((op) => keyOf(op) === key),
              exists.has(key),
            ),
          )
          .filter((op) => op !== null)
        expect(JSON.stringify(out)).toBe(JSON.stringify(expected))
        expect(out).toEqual(expected)
        // Asked once per record whose run starts with an insert, in order of first appearance.
        expect(asked).toEqual(keys.filter((key) => raw.find((op) => keyOf(op) === key)?.action === 'insert'))
      }),
      { numRuns: 3000 },
    )
  })

  it('keeps a "__proto__" field a plain field when merging updates, as spreading does', () => {
    const changes = JSON.parse('{"__proto__": {"polluted": true}, "a": 2}') as Record<string, unknown>
    const [merged] = compact([ins('1', { a: 1 }), upd('1', { b: 1 }), upd('1', changes)])
    const record = (merged as Extract<Operation, { action: 'insert' }>).record
    expect(Object.getPrototypeOf(record)).toBe(Object.prototype)
    expect(Object.keys(record)).toEqual(['a', 'b', '__proto__'])
    expect(record.a).toBe(2)
  })
})

/** The operation-by-operation fold `compactRecord` once was: the model it is checked against. */
function foldRecord(ops: readonly Operation[], existsRemotely: boolean): Operation | null {
  const first = ops[0]
  if (first === undefined) return null
  const mayExist = existsRemotely || first.action !== 'insert'
  let current: Operation | null = first
  let base: number | undefined
  for (let i = 0; i < ops.length; i++) {
    const next = ops[i] as Operation
    const { collection, recordId } = next // one record: the same in every operation
    base ??= next.baseRevision
    if (i === 0) continue
    if (current === null || next.action === 'insert') current = next
    else if (next.action === 'delete') current = current.action === 'insert' && !mayExist ? null : next
    else if (current.action === 'insert') {
      current = { action: 'insert', collection, recordId, record: { ...current.record, ...next.changes } }
    } else if (current.action === 'update') {
      current = { action: 'update', collection, recordId, changes: { ...current.changes, ...next.changes } }
    }
  }
  if (current === null || current.baseRevision === base) return current
  const { baseRevision: _later, ...rest } = current
  return base === undefined ? rest : { ...rest, baseRevision: base }
}
