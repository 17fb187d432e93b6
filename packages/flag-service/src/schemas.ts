import { BIDI_CONTROL } from '@flagsync/protocol'
import { z } from 'zod'
import { ROLES } from './auth/context.js'

// The parts every resource's request bodies share (each resource's `schema.ts` holds its bodies). Every body is
// strict: an unknown field is a 422 naming it, so a typo such as `expire_in_days` never passes silently.

export const LIMITS = {
  nameLength: 100,
  emailLength: 254,
  passwordMin: 8,
  passwordMax: 1024,
  environmentSlugLength: 64,
  tokenDaysMin: 1,
  tokenDaysMax: 365,
} as const

// biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is the point
const CONTROL = /[\u0000-\u001f\u007f]/
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/

/**
 * The rule for every name, email and id the service keeps in a column of its
 * own: PostgreSQL text cannot hold NUL (the driver's error was a 500 at every
 * route that wrote one), drivers turn an unpaired surrogate into U+FFFD (two
 * names would become one), and a line break or other control character in a
 * name misprints every list. Refused alike on both dialects, so SQLite does
 * not store what PostgreSQL cannot.
 */
export const isPlainText = (s: string) => !CONTROL.test(s) && !hasUnpairedSurrogate(s)
/** UTF-8 has no unpaired surrogate: encoding (a driver's, a hash's input) turns every one into the same U+FFFD. */
export const hasUnpairedSurrogate = (s: string) => LONE_SURROGATE.test(s)
export const PLAIN_TEXT_MESSAGE = 'must not contain control characters or unpaired surrogates'

const BIDI_MESSAGE =
  'must not contain bidirectional embedding, override or isolate characters (U+202A–U+202E, U+2066–U+2069)'

/** A name: trimmed, 1 to 100 characters of plain text, without bidirectional controls. */
export const nameSchema = z
  .string()
  .trim()
  .min(1, 'must not be empty')
  .max(LIMITS.nameLength, `must be at most ${LIMITS.nameLength} characters`)
  .refine(isPlainText, PLAIN_TEXT_MESSAGE)
  .refine((s) => !BIDI_CONTROL.test(s), BIDI_MESSAGE)
export const roleSchema = z.enum(ROLES)
/** A field that may not be sent, with the reason as its 422 message. */
export const refused = (message: string) => z.never({ error: message }).optional()

/** UUIDs as `crypto.randomUUID` makes them; anything else in a path is a 404 without a query. */
export const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

/** A positive 32-bit integer id from a path segment, or undefined (then the route answers 404). */
export function intId(raw: string | undefined): number | undefined {
  if (raw === undefined || !/^[1-9]\d{0,9}$/.test(raw)) return undefined
  const value = Number(raw)
  return value <= 2_147_483_647 ? value : undefined
}
