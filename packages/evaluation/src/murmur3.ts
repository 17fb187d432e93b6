const C1 = 0xcc9e2d51
const C2 = 0x1b873593

/**
 * MurmurHash3, x86 32-bit variant, over the UTF-8 bytes of `input`; returns an
 * unsigned 32-bit integer. Matches the reference implementation (and Unleash,
 * mmh3, Guava): lone surrogates are hashed as U+FFFD, as TextEncoder encodes them.
 */
export function murmur3(input: string, seed = 0): number {
  begin(seed)
  absorb(input)
  return end()
}

/**
 * `murmur3(`${first}:${second}`, seed)` without building that string: on the
 * evaluation hot path, concatenating and then flattening the string for
 * `charCodeAt` costs more than hashing it.
 */
export function murmur3Pair(first: string, second: string, seed: number): number {
  begin(seed)
  absorb(first)
  absorb(':')
  absorb(second)
  return end()
}

// Hasher state, module-level so that hashing allocates nothing. Safe because
// hashing is synchronous and never re-entered.
let h = 0
let block = 0 // up to four pending bytes, little-endian
let shift = 0 // bits already in `block`
let length = 0 // bytes hashed so far

function begin(seed: number): void {
  h = seed | 0
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
  let hash = h
  let pending = block
  let bits = shift
  let bytes = length
  let i = 0
  while (i < input.length) {
    if (i + 4 <= input.length) {
      const word = asciiWord(input, i)
      if (word >= 0) {
        // Completes the pending block; the word's last `bits / 8` bytes start the next one.
        hash = mixBlock(hash, pending | (word << bits))
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
        hash = mixBlock(hash, pending)
        pending = 0
        bits = 0
      }
    }
  }
  h = hash
  block = pending
  shift = bits
  length = bytes
}

/** Chars `i` to `i + 3` as one little-endian word when all four are ASCII, else -1. */
function asciiWord(input: string, i: number): number {
  const a = input.charCodeAt(i)
  const b = input.charCodeAt(i + 1)
  const c = input.charCodeAt(i + 2)
  const d = input.charCodeAt(i + 3)
  return (a | b | c | d) < 0x80 ? a | (b << 8) | (c << 16) | (d << 24) : -1
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

function mixBlock(hash: number, k: number): number {
  hash ^= scramble(k)
  hash = (hash << 13) | (hash >>> 19)
  return (Math.imul(hash, 5) + 0xe6546b64) | 0
}

function scramble(k: number): number {
  k = Math.imul(k, C1)
  k = (k << 15) | (k >>> 17)
  return Math.imul(k, C2)
}

/** Mixes the partial last block, then fmix32 makes every input bit affect every output bit. */
function end(): number {
  let x = h
  if (shift > 0) x ^= scramble(block)
  x ^= length
  x ^= x >>> 16
  x = Math.imul(x, 0x85ebca6b)
  x ^= x >>> 13
  x = Math.imul(x, 0xc2b2ae35)
  x ^= x >>> 16
  return x >>> 0
}
