import { wireUserId, wireValue } from '@flagsync/flag-client'
import { describe, expect, it } from 'vitest'

describe('what the flag client sends for an evaluation', () => {
  it('sends values as text the service accepts', () => {
    expect(wireValue(true)).toBe('true')
    expect(wireValue(false)).toBe('false')
    expect(wireValue(3.5)).toBe('3.5')
    expect(wireValue('')).toBe('')
    expect(wireValue({ a: [1, 'b'] })).toBe('{"a":[1,"b"]}')
    expect(wireValue(undefined)).toBeUndefined()
    // At most 512 code units, never half a surrogate pair, and no unpaired surrogate.
    expect(wireValue('x'.repeat(600))).toBe('x'.repeat(512))
    expect(wireValue(`${'x'.repeat(511)}😀`)).toBe('x'.repeat(511))
    expect(wireValue('a\ud800b')).toBe('a\ufffdb')
    // NUL (a string flag may hold one on SQLite) is refused by the service: sent as U+FFFD, in JSON values too.
    expect(wireValue('a\u0000b\u0000')).toBe('a\ufffdb\ufffd')
    expect(wireValue({ a: 'x\u0000' })).toBe('{"a":"x\\u0000"}')
  })

  it('sends a user id the service accepts, else none (anonymous)', () => {
    expect(wireUserId('u-1')).toBe('u-1')
    expect(wireUserId(42)).toBe('42')
    expect(wireUserId('user 😀')).toBe('user 😀')
    for (const bad of ['', 'tab\there', 'a\udc00', 'x'.repeat(257), Number.NaN, null, undefined, { id: 1 }]) {
      expect(wireUserId(bad)).toBeNull()
    }
  })
})
