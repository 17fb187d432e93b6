import { ifNoneMatchHits } from '@flagsync/server-kit'
import { describe, expect, it } from 'vitest'

describe('ifNoneMatchHits (RFC 9110 weak comparison)', () => {
  const etag = '"abc"'
  it.each([
    ['"abc"', true],
    ['W/"abc"', true],
    ['"x", "abc"', true],
    ['"x",W/"abc" , "y"', true],
    ['"x", , "abc"', true],
    ['"a,b", "abc"', true],
    ['*', true],
    [' * ', true],
    ['"abc", ', true],
    ['"x"', false],
    ['"ab"', false],
    ['abc', false],
    ['W/abc', false],
    ['"x" "abc"', false],
    ['"abc" junk', false],
    ['', false],
  ])('If-None-Match: %s → %s', (header, hit) => {
    expect(ifNoneMatchHits(header, etag)).toBe(hit)
  })

  it('compares a weak current tag weakly too, and reads repeated headers as one list', () => {
    expect(ifNoneMatchHits('"abc"', 'W/"abc"')).toBe(true)
    expect(ifNoneMatchHits(['"x"', 'W/"abc"'], etag)).toBe(true)
    expect(ifNoneMatchHits(undefined, etag)).toBe(false)
  })
})
