import { z } from 'zod'
import { ROLES, TOKEN_SCOPES } from './auth/context.js'
import { SDK_KEY_KINDS } from './auth/secrets.js'
import { ENVIRONMENT_SLUG_PATTERN } from './slug.js'

// Request bodies. Every object is strict: an unknown field is a 422 naming it,
// so a typo such as `expire_in_days` never passes silently.

const LIMITS = {
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
export const isPlainText = (s: string) => !CONTROL.test(s) && !LONE_SURROGATE.test(s)
export const PLAIN_TEXT_MESSAGE = 'must not contain control characters or unpaired surrogates'

const name = z
  .string()
  .trim()
  .min(1, 'must not be empty')
  .max(LIMITS.nameLength, `must be at most ${LIMITS.nameLength} characters`)
  .refine(isPlainText, PLAIN_TEXT_MESSAGE)
const role = z.enum(ROLES)
const refused = (message: string) => z.never({ error: message }).optional()

export const loginSchema = z.strictObject({
  // Checked although no stored email can match: the lockout's advisory lock hashes it in SQL.
  email: z.string().max(LIMITS.emailLength).refine(isPlainText, PLAIN_TEXT_MESSAGE),
  password: z.string().max(LIMITS.passwordMax),
})

export const createUserSchema = z.strictObject({
  name,
  email: z.email('must be an email address').max(LIMITS.emailLength),
  role,
  password: z
    .string()
    .min(LIMITS.passwordMin, `must be at least ${LIMITS.passwordMin} characters`)
    .max(LIMITS.passwordMax, `must be at most ${LIMITS.passwordMax} characters`),
})

export const createTokenSchema = z.strictObject({
  name,
  scope: z.enum(TOKEN_SCOPES),
  /** Omitted or null: the token never expires. */
  expires_in_days: z
    .number()
    .int('must be a whole number of days')
    .min(LIMITS.tokenDaysMin, 'must be 1 to 365')
    .max(LIMITS.tokenDaysMax, 'must be 1 to 365')
    .nullable()
    .optional(),
})

export const projectNameSchema = z.strictObject({ name, slug: refused('is derived from the name and cannot be set') })

export const addMemberSchema = z.strictObject({
  user_id: z.number().int().positive().max(2_147_483_647),
  role,
})

export const updateMemberSchema = z.strictObject({ role })

const color = z
  .string()
  .regex(/^#(?:[0-9a-fA-F]{3}|[0-9a-fA-F]{6})$/, 'must be a hex color #rgb or #rrggbb')
  .transform((c) => c.toLowerCase())

export const createEnvironmentSchema = z.strictObject({
  name,
  slug: z
    .string()
    .min(1, 'must not be empty')
    .max(LIMITS.environmentSlugLength, `must be at most ${LIMITS.environmentSlugLength} characters`)
    .regex(ENVIRONMENT_SLUG_PATTERN, 'may contain only lowercase letters, digits and hyphens')
    // Omitted: derived from the name by the project slug rule.
    .optional(),
  color: color.optional(),
})

export const updateEnvironmentSchema = z
  .strictObject({
    name: name.optional(),
    color: color.optional(),
    slug: refused('cannot be changed after creation'),
    is_default: refused('is set with POST …/environments/{env_id}/default'),
    require_approval: refused('is set with POST …/environments/{env_id}/require-approval'),
  })
  .refine((v) => v.name !== undefined || v.color !== undefined, { error: 'send name or color' })

export const requireApprovalSchema = z.strictObject({ require_approval: z.boolean() })

/** Every environment id of the project once, in the new order (checked against the project in the route). */
export const reorderEnvironmentsSchema = z.strictObject({
  environment_ids: z.array(z.string().max(36)).min(1, 'must list the environments').max(1000),
})

export const createSdkKeySchema = z.strictObject({
  name,
  environment_id: z.string().max(36),
  /** 'server' (sk_live_…, admin of the project) or 'client' (pk_live_…, may be shown in a page). */
  kind: z.enum(SDK_KEY_KINDS).default('server'),
})

/** UUIDs as `crypto.randomUUID` makes them; anything else in a path is a 404 without a query. */
export const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i
export const DEFAULT_ENVIRONMENT_COLOR = '#6366f1'

/** A positive 32-bit integer id from a path segment, or undefined (then the route answers 404). */
export function intId(raw: string | undefined): number | undefined {
  if (raw === undefined || !/^[1-9]\d{0,9}$/.test(raw)) return undefined
  const value = Number(raw)
  return value <= 2_147_483_647 ? value : undefined
}
