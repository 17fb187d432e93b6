import { z } from 'zod'
import { hasUnpairedSurrogate, LIMITS, nameSchema, roleSchema } from '../schemas.js'

const PASSWORD_MAX_MESSAGE = `must be at most ${LIMITS.passwordMax} characters`

/** A password as sent to be checked (login, the current one): any text up to the longest a password may be. */
export const passwordInputSchema = z.string().max(LIMITS.passwordMax, PASSWORD_MAX_MESSAGE)

/**
 * The one password rule: creating a user, an admin's reset and a user's own change all use it. Any character but an
 * unpaired surrogate, which hashing reads as U+FFFD: "\uD800…" and "\uDBFF…" would be one password.
 */
export const passwordSchema = z
  .string()
  .min(LIMITS.passwordMin, `must be at least ${LIMITS.passwordMin} characters`)
  .max(LIMITS.passwordMax, PASSWORD_MAX_MESSAGE)
  .refine((s) => !hasUnpairedSurrogate(s), 'must not contain unpaired surrogates')

export const createUserSchema = z.strictObject({
  name: nameSchema,
  email: z.email('must be an email address').max(LIMITS.emailLength),
  role: roleSchema,
  password: passwordSchema,
})

/** PATCH /api/users/:id: a new workspace role, a new display name, or both. */
export const updateUserSchema = z
  .strictObject({ role: roleSchema.optional(), name: nameSchema.optional() })
  .refine((u) => u.role !== undefined || u.name !== undefined, 'send role, name or both')

/** POST /api/users/:id/password: an admin sets a user's password. */
export const resetPasswordSchema = z.strictObject({ password: passwordSchema })
