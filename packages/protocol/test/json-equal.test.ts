import { jsonEqual } from '@flagsync/protocol'
import { describe, expect, it } from 'vitest'

describe('jsonEqual', () => {
  it('compares JSON data structurally: key order aside, undefined members absent', () => {
    expect(jsonEqual({ b: [1, { c: 'x' }], a: true }, { a: true, b: [1, { c: 'x' }] })).toBe(true)
    expect(jsonEqual({ a: 1, gone: undefined }, { a: 1 })).toBe(true)
    expect(jsonEqual({ a: 1 }, { a: 1, gone: undefined })).toBe(true)
    expect(jsonEqual({ a: 1 }, { a: 1, b: null })).toBe(false)
    expect(jsonEqual({ a: 1, b: null }, { a: 1 })).toBe(false)
    expect(jsonEqual({ a: [1, 2] }, { a: [2, 1] })).toBe(false)
    expect(jsonEqual({ a: [1] }, { a: { 0: 1 } })).toBe(false)
    expect(jsonEqual([1], [1, null])).toBe(false)
    expect(jsonEqual({ a: '1' }, { a: 1 })).toBe(false)
    expect(jsonEqual({ a: null }, { a: {} })).toBe(false)
  })

  it('answers the same with its arguments swapped', () => {
    const pairs: Array<[unknown, unknown]> = [
      [{ a: 1, gone: undefined }, { a: 1 }],
      [undefined, null],
      [{ a: { b: [1, 'x', null] } }, { a: { b: [1, 'x', null] } }],
      [{ a: 1 }, { a: 1, b: null }],
      ['1', 1],
      [[1, 2], { 0: 1, 1: 2 }],
    ]
    for (const [a, b] of pairs) expect(jsonEqual(a, b)).toBe(jsonEqual(b, a))
  })

  it('tells a missing record field from a null one: a field set to null is a change', () => {
    expect(jsonEqual(undefined, null)).toBe(false)
    expect(jsonEqual(null, undefined)).toBe(false)
    expect(jsonEqual(undefined, undefined)).toBe(true)
  })
})
