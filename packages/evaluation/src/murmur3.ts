const C1 = 0xcc9e2d51
const C2 = 0x1b873593

/**
 * MurmurHash3, x86 32-bit variant, over the UTF-8 bytes of `input`; returns an
 * unsigned 32-bit integer. Matches the reference implementation (and Unleash,
 * mmh3, Guava): lone surrogates are hashed as U+FFFD, as TextEncoder encodes them.
 */
export function murmur3(input: string, seed = 0): number {
  begin(seed, seed)
  absorb(input)
  return finish(hashA)
}

/** The two hashes `murmur3Pair` computes. */
export interface HashPair {
  a: number
  b: number
}

/**
 * `murmur3(`${first}:${second}`, seedA)` into `out.a` and the same under
 * `seedB` into `out.b`. On the evaluation hot path this matters twice: no
 * string is built (concatenating, then flattening it for `charCodeAt`, costs
 * more than hashing), and both seeds take one pass, since a seed only enters
 * the running state and the UTF-8 encoding and block scrambling can be shared.
 */
export function murmur3Pair(first: string, second: string, seedA: number, seedB: number, out: HashPair): HashPair {
  begin(seedA, seedB)
  absorb(first)
  absorb(':')
  absorb(second)
  out.a = finish(hashA)
  out.b = finish(hashB)
  return out
}

/** The two running hashes after a prefix (see {@link murmur3Prefix}). */
export interface HashPrefix {
  readonly a: number
  readonly b: number
  readonly block: number
  readonly shift: number
  readonly length: number
}

/**
 * The state of `murmur3Pair` after hashing `prefix` under both seeds, for
 * {@link murmur3From}: a flag's `"<key>:"` is hashed once per flag set, not once per user.
 */
export function murmur3Prefix(prefix: string, seedA: number, seedB: number): HashPrefix {
  begin(seedA, seedB)
  absorb(prefix)
  return { a: hashA, b: hashB, block, shift, length }
}

/** `murmur3Pair` of the prefix's text followed by `rest`, from the prefix's state: the same two hashes. */
export function murmur3From(prefix: HashPrefix, rest: string, out: HashPair): HashPair {
  hashA = prefix.a
  hashB = prefix.b
  block = prefix.block
  shift = prefix.shift
  length = prefix.length
  absorb(rest)
  out.a = finish(hashA)
  out.b = finish(hashB)
  return out
}

// Hasher state, module-level so that hashing allocates nothing. Safe because
// hashing is synchronous and never re-entered.
let hashA = 0 // running hash under the first seed
let hashB = 0 // and under the second
let block = 0 // up to four pending bytes, little-endian
let shift = 0 // bits already in `block`
let length = 0 // bytes hashed so far

function begin(seedA: number, seedB: number): void {
  hashA = seedA | 0
  hashB = seedB | 0
  block = 0
  shift = 0
  length = 0
}

/**
 * Encodes `input` as UTF-8 from its char codes (no TextEncoder buffer) and
 * hashes the bytes. Keys and user ids are nearly always ASCII, so four ASCII
 * chars are taken as one 32-bit word at any alignment; other chars go byte by
 * byte. The state is copied into locals: module variables cannot live in registers.
 */
function absorb(input: string): void {
  let a = hashA
  let b = hashB
  let pending = block
  let bits = shift
  let bytes = length
  let i = 0
  while (i < input.length) {
    if (i + 4 <= input.length) {
      const c0 = input.charCodeAt(i)
      const c1 = input.charCodeAt(i + 1)
      const c2 = input.charCodeAt(i + 2)
      const c3 = input.charCodeAt(i + 3)
      if ((c0 | c1 | c2 | c3) < 0x80) {
        const word = c0 | (c1 << 8) | (c2 << 16) | (c3 << 24)
        // Completes the pending block; the word's last `bits / 8` bytes start the next one.
        const k = scramble(pending | (word << bits))
        a = step(a, k)
        b = step(b, k)
        pending = bits === 0 ? 0 : word >>> (32 - bits)
        bytes += 4
        i += 4
        continue
      }
    }
    const c = input.charCodeAt(i)
    let utf8: number // the code point's UTF-8 bytes, first byte lowest
    let count: number
    if (c < 0x80) {
      utf8 = c
      count = 1
    } else if (c < 0x800) {
      utf8 = 0xc0 | (c >> 6) | ((0x80 | (c & 0x3f)) << 8)
      count = 2
    } else {
      const next = input.charCodeAt(i + 1) // NaN past the end, which fails the range test
      if (c >= 0xd800 && c <= 0xdbff && next >= 0xdc00 && next <= 0xdfff) {
        utf8 = utf8Of4(0x10000 + ((c - 0xd800) << 10) + (next - 0xdc00))
        count = 4
        i++
      } else {
        const cp = c >= 0xd800 && c <= 0xdfff ? 0xfffd : c
        utf8 = 0xe0 | (cp >> 12) | ((0x80 | ((cp >> 6) & 0x3f)) << 8) | ((0x80 | (cp & 0x3f)) << 16)
        count = 3
      }
    }
    i++
    bytes += count
    for (; count > 0; count--) {
      pending |= (utf8 & 0xff) << bits
      utf8 >>>= 8
      bits += 8
      if (bits === 32) {
        const k = scramble(pending)
        a = step(a, k)
        b = step(b, k)
        pending = 0
        bits = 0
      }
    }
  }
  hashA = a
  hashB = b
  block = pending
  shift = bits
  length = bytes
}

/** The four UTF-8 bytes of a supplementary code point, first byte lowest. */
function utf8Of4(cp: number): number {
  return (
    0xf0 |
    (cp >> 18) |
    ((0x80 | ((cp >> 12) & 0x3f)) << 8) |
    ((0x80 | ((cp >> 6) & 0x3f)) << 16) |
    ((0x80 | (cp & 0x3f)) << 24)
  )
}

/** Mixes one scrambled block into a running hash. */
function step(hash: number, k: number): number {
  hash ^= k
  hash = (hash << 13) | (hash >>> 19)
  return (Math.imul(hash, 5) + 0xe6546b64) | 0
}

function scramble(k: number): number {
  k = Math.imul(k, C1)
  k = (k << 15) | (k >>> 17)
  return Math.imul(k, C2)
}

/** Mixes the partial last block, then fmix32 makes every input bit affect every output bit. */
function finish(hash: number): number {
  let x = hash
  if (shift > 0) x ^= scramble(block)
  x ^= length
  x ^= x >>> 16
  x = Math.imul(x, 0x85ebca6b)
  x ^= x >>> 13
  x = Math.imul(x, 0xc2b2ae35)
  x ^= x >>> 16
  return x >>> 0
}
