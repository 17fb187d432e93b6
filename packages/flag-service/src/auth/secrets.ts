import { createHash, randomBytes, timingSafeEqual } from 'node:crypto'

export const PAT_PREFIX = 'pat_'
export const SDK_KEY_PREFIX = 'sk_live_'
const CLIENT_KEY_PREFIX = 'pk_live_'

/**
 * A server key (`sk_live_…`) acts as an admin of its project; a client key
 * (`pk_live_…`) may be shown in a page and only evaluates flags and reports
 * impressions for its environment (`clientKeyMay` in authenticate.ts).
 */
export const SDK_KEY_KINDS = ['server', 'client'] as const
export type SdkKeyKind = (typeof SDK_KEY_KINDS)[number]

/** The prefix every key of a kind starts with. */
export const SDK_KEY_PREFIXES: Record<SdkKeyKind, string> = { server: SDK_KEY_PREFIX, client: CLIENT_KEY_PREFIX }

/** Whether a secret has the form of an SDK key of either kind. */
export const isSdkKeySecret = (secret: string) =>
  secret.startsWith(SDK_KEY_PREFIX) || secret.startsWith(CLIENT_KEY_PREFIX)
const DISPLAY_LENGTH = 12

/** `<prefix>` + 32 random bytes in base64url (43 characters): 256 bits, URL- and header-safe. */
export function generateSecret(prefix: string): string {
  return `${prefix}${randomBytes(32).toString('base64url')}`
}

/** What is stored for a token, key or session id: SHA-256, hex. The secret itself never is. */
export function hashSecret(secret: string): string {
  return createHash('sha256').update(secret, 'utf8').digest('hex')
}

/** The display form kept next to the hash: the first 12 characters and an ellipsis (`sk_live_AbCd…`). */
export function displayPrefix(secret: string): string {
  return `${secret.slice(0, DISPLAY_LENGTH)}…`
}

/** Constant-time equality of two hex SHA-256 digests. */
export function hashesEqual(a: string, b: string): boolean {
  const x = Buffer.from(a, 'hex')
  const y = Buffer.from(b, 'hex')
  return x.length === 32 && y.length === 32 && timingSafeEqual(x, y)
}
