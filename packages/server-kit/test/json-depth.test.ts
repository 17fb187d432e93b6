import { jsonDepthExceeds, MAX_JSON_DEPTH } from '@flagsync/server-kit'
import { describe, expect, it } from 'vitest'

const nestedArrays = (depth: number): unknown => JSON.parse('['.repeat(depth) + ']'.repeat(depth))
const nestedObjects = (depth: number): unknown => JSON.parse('{"a":'.repeat(depth - 1) + '{}' + '}'.repeat(depth - 1))

describe('jsonDepthExceeds', () => {
  it('counts a scalar as depth 0 and each array or object as one level', () => {
    for (const scalar of [null, 1, 'x', true]) expect(jsonDepthExceeds(scalar, 0)).toBe(false)
    expect(jsonDepthExceeds({}, 0)).toBe(true)
    expect(jsonDepthExceeds({}, 1)).toBe(false)
    expect(jsonDepthExceeds({ a: [1, { b: 2 }] }, 3)).toBe(false)
    expect(jsonDepthExceeds({ a: [1, { b: 2 }] }, 2)).toBe(true)
  })

  it('allows 64 levels by default and refuses 65, for arrays and objects alike', () => {
    expect(MAX_JSON_DEPTH).toBe(64)
    expect(jsonDepthExceeds(nestedArrays(64))).toBe(false)
    expect(jsonDepthExceeds(nestedArrays(65))).toBe(true)
    expect(jsonDepthExceeds(nestedObjects(64))).toBe(false)
    expect(jsonDepthExceeds(nestedObjects(65))).toBe(true)
  })

  it('finds the deep branch among wide shallow ones, and counts keys JSON.parse made own (__proto__)', () => {
    const wide = { list: Array.from({ length: 1000 }, (_, i) => ({ i })), deep: nestedArrays(70) }
    expect(jsonDepthExceeds(wide)).toBe(true)
    expect(jsonDepthExceeds(JSON.parse(`{"__proto__":${'['.repeat(70)}${']'.repeat(70)}}`))).toBe(true)
  })

  it('is iterative: a value nested 200 000 deep is checked without overflowing the stack', () => {
    expect(jsonDepthExceeds(nestedArrays(200_000))).toBe(true)
  })
})
