import type { Operation } from '@flagsync/protocol'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { compact, compactRecord } from '../src/index.js'

// Compaction and baseRevision: a record's run is sent as one operation, checked by the receiver against the base
// of the FIRST edit of the run (what the editor saw before any of them), so changes made by others in between are
// still caught.

const RECORDS = ['a', 'b', 'c']
const op = fc
  .record({
    rec: fc.constantFrom(...RECORDS),
    action: fc.constantFrom('insert', 'update', 'delete'),
    field: fc.constantFrom('p', 'q'),
    value: fc.integer({ min: 0, max: 9 }),
    base: fc.option(fc.integer({ min: 0, max: 50 }), { nil: undefined }),
  })
  .map(({ rec, action, field, value, base }): Operation => {
    const withBase = base === undefined ? {} : { baseRevision: base }
    if (action === 'insert') return { action, collection: 'c', recordId: rec, record: { [field]: value }, ...withBase }
    if (action === 'update') return { action, collection: 'c', recordId: rec, changes: { [field]: value }, ...withBase }
    return { action, collection: 'c', recordId: rec, ...withBase }
  })

describe('compact keeps the earliest base of a record’s run', () => {
  it('examples: update, update; insert after delete; no base at all', () => {
    const out = compact([
      { action: 'update', collection: 'c', recordId: 'a', changes: { p: 1 }, baseRevision: 4 },
      { action: 'update', collection: 'c', recordId: 'a', changes: { q: 2 }, baseRevision: 7 },
      { action: 'delete', collection: 'c', recordId: 'b', baseRevision: 3 },
      { action: 'insert', collection: 'c', recordId: 'b', record: { p: 1 }, baseRevision: 9 },
      { action: 'update', collection: 'c', recordId: 'n', changes: { p: 1 } },
    ])
    expect(out).toEqual([
      { action: 'update', collection: 'c', recordId: 'a', changes: { p: 1, q: 2 }, baseRevision: 4 },
      { action: 'insert', collection: 'c', recordId: 'b', record: { p: 1 }, baseRevision: 3 },
      { action: 'update', collection: 'c', recordId: 'n', changes: { p: 1 } },
    ])
    expect('baseRevision' in (out[2] as object)).toBe(false)
  })

  it('property: every compacted operation carries the first base of its record’s run; both compactions agree', () => {
    fc.assert(
      fc.property(fc.array(op, { maxLength: 40 }), (ops) => {
        const out = compact(ops)
        for (const compacted of out) {
          const run = ops.filter((o) => o.recordId === compacted.recordId)
          const first = run.find((o) => o.baseRevision !== undefined)?.baseRevision
          expect(compacted.baseRevision).toBe(first)
          if (first === undefined) expect('baseRevision' in compacted).toBe(false)
          expect(compactRecord(run)).toEqual(compacted)
        }
        // The inputs are never mutated (a queued operation keeps its own base).
        expect(ops.every((o) => o.baseRevision === undefined || typeof o.baseRevision === 'number')).toBe(true)
      }),
      { numRuns: 500 },
    )
  })

  it('property: the bases do not change what is sent besides the base', () => {
    fc.assert(
      fc.property(fc.array(op, { maxLength: 40 }), (ops) => {
        const strip = (o: Operation): Operation => {
          const { baseRevision: _b, ...rest } = o
          return rest
        }
        expect(compact(ops).map(strip)).toEqual(compact(ops.map(strip)))
      }),
      { numRuns: 300 },
    )
  })
})
