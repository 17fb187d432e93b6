import { randomBytes, type ScryptOptions, scrypt, timingSafeEqual } from 'node:crypto'

/** scrypt cost: N=16384, r=8, p=1 (16 MiB, tens of ms), a 16-byte salt and a 64-byte key (as GrowthBook stores them). */
const PARAMS = { N: 16_384, r: 8, p: 1 } as const
const SALT_BYTES = 16
const KEY_BYTES = 64

function derive(password: string, salt: Buffer, params: { N: number; r: number; p: number }): Promise<Buffer> {
  const options: ScryptOptions = { ...params, maxmem: 128 * params.N * params.r * 2 }
  return new Promise((resolve, reject) => {
    scrypt(password.normalize('NFC'), salt, KEY_BYTES, options, (err, key) => (err ? reject(err) : resolve(key)))
  })
}

/** `scrypt$N$r$p$<salt base64url>$<key base64url>`: the parameters travel with the hash, so they can be raised later. */
export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(SALT_BYTES)
  const key = await derive(password, salt, PARAMS)
  return ['scrypt', PARAMS.N, PARAMS.r, PARAMS.p, salt.toString('base64url'), key.toString('base64url')].join('$')
}

/** Constant-time check of a password against a stored hash; a malformed hash never matches. */
export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const parts = stored.split('$')
  if (parts.length !== 6 || parts[0] !== 'scrypt') return false
  const [N, r, p] = parts.slice(1, 4).map(Number)
  if (!N || !r || !p || N > 1 << 20 || r > 32 || p > 16) return false
  const salt = Buffer.from(parts[4] ?? '', 'base64url')
  const expected = Buffer.from(parts[5] ?? '', 'base64url')
  if (expected.length !== KEY_BYTES) return false
  const actual = await derive(password, salt, { N, r, p })
  return timingSafeEqual(actual, expected)
}

let dummy: Promise<string> | undefined
/**
 * A hash to verify against when the email is unknown, so a login for a
 * missing account costs the same time as one with a wrong password.
 */
export function dummyPasswordHash(): Promise<string> {
  dummy ??= hashPassword(randomBytes(16).toString('hex'))
  return dummy
}
