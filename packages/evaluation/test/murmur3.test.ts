import { bucket, murmur3, VARIANT_SEED } from '@flagsync/evaluation'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'

/**
 * A second, deliberately plain implementation over TextEncoder's bytes, to
 * cross-check the allocation-free one on arbitrary strings.
 */
function referenceMurmur3(input: string, seed: number): number {
  const bytes = new TextEncoder().encode(input)
  const rotl = (x: number, r: number) => (x << r) | (x >>> (32 - r))
  const scramble = (k: number) => Math.imul(rotl(Math.imul(k, 0xcc9e2d51), 15), 0x1b873593)
  let h = seed | 0
  const blocks = bytes.length >> 2
  for (let b = 0; b < blocks; b++) {
    const o = b * 4
    const k = (bytes[o] ?? 0) | ((bytes[o + 1] ?? 0) << 8) | ((bytes[o + 2] ?? 0) << 16) | ((bytes[o + 3] ?? 0) << 24)
    h = (Math.imul(rotl(h ^ scramble(k), 13), 5) + 0xe6546b64) | 0
  }
  let k = 0
  for (let j = bytes.length - 1; j >= blocks * 4; j--) k = (k << 8) | (bytes[j] ?? 0)
  if (bytes.length % 4 !== 0) h ^= scramble(k)
  h ^= bytes.length
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b)
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35)
  return (h ^ (h >>> 16)) >>> 0
}

/** Any UTF-16 sequence, lone surrogates included. */
const utf16 = fc
  .array(fc.integer({ min: 0, max: 0xffff }), { maxLength: 40 })
  .map((codes) => String.fromCharCode(...codes))

describe('murmur3', () => {
  // Published vectors, plus non-ASCII ones computed with a Python implementation
  // of the reference algorithm over str.encode('utf-8') that reproduces the published ones.
  it.each([
    ['', 0, 0],
    ['', 1, 0x514e28b7],
    ['', 0xffffffff, 0x81f16f39],
    ['hello', 0, 0x248bfa47],
    ['Hello, world!', 1234, 0xfaf6cdb3],
    ['The quick brown fox jumps over the lazy dog', 0, 0x2e4ff723],
    ['héllo wörld', 0, 2549609076],
    ['日本語', 0, 2779017879],
    ['😀', 0, 3199479546],
    ['a😀b', 42, 373397323],
    ['Ω≈ç√', 86028157, 3764136565],
    ['new-checkout:user-42', 0, 1499260774],
    ['new-checkout:user-42', 86028157, 3276796958],
    ['\ufffd', 0, 3063719617],
  ])('murmur3(%j, %d) = %d', (input, seed, expected) => {
    expect(murmur3(input, seed)).toBe(expected)
  })

  it('hashes a lone surrogate as U+FFFD, as TextEncoder encodes it', () => {
    expect(murmur3('\ud800', 0)).toBe(murmur3('\ufffd', 0))
    expect(murmur3('x\udc00y', 7)).toBe(murmur3('x\ufffdy', 7))
  })

  it('defaults the seed to 0', () => {
    expect(murmur3('hello')).toBe(0x248bfa47)
  })

  it('agrees with a plain implementation over TextEncoder bytes on any string and seed', () => {
    fc.assert(
      fc.property(
        fc.oneof(utf16, fc.string({ unit: 'binary' }), fc.string()),
        fc.integer({ min: 0, max: 0xffffffff }),
        (input, seed) => {
          expect(murmur3(input, seed)).toBe(referenceMurmur3(input, seed))
        },
      ),
      { numRuns: 1000 },
    )
  })
})

describe('bucket', () => {
  it('is murmur3 of "<flagKey>:<userId>" modulo the size', () => {
    expect(bucket('new-checkout', 'user-42')).toBe(1499260774 % 100)
    expect(bucket('new-checkout', 'user-42', VARIANT_SEED)).toBe(3276796958 % 100)
    expect(bucket('new-checkout', 'user-42', VARIANT_SEED, 7)).toBe(3276796958 % 7)
    fc.assert(
      fc.property(fc.oneof(utf16, fc.string()), fc.oneof(utf16, fc.string()), fc.nat(), (key, user, seed) => {
        expect(bucket(key, user, seed, 1000)).toBe(murmur3(`${key}:${user}`, seed) % 1000)
      }),
      { numRuns: 1000 },
    )
  })

  it('is deterministic and in [0, 100)', () => {
    fc.assert(
      fc.property(fc.string(), fc.string(), (key, user) => {
        const b = bucket(key, user)
        expect(Number.isInteger(b) && b >= 0 && b < 100).toBe(true)
        expect(bucket(key, user)).toBe(b)
      }),
    )
  })

  it('spreads users uniformly: each of the 100 buckets gets 1 % ± 0.2 % of 200 000 ids', () => {
    const counts = new Array<number>(100).fill(0)
    for (let i = 0; i < 200_000; i++) {
      const b = bucket('uniformity', `user-${i}`)
      counts[b] = (counts[b] ?? 0) + 1
    }
    // Expected 2 000 per bucket, standard deviation ~44: ±400 is far outside chance.
    for (const count of counts) expect(count).toBeGreaterThan(1_600)
    for (const count of counts) expect(count).toBeLessThan(2_400)
  })
})
