import { z } from 'zod'
import { LIMITS, nameSchema, roleSchema } from '../schemas.js'

/** The one password rule: creating a user, an admin's reset and a user's own change all use it. */
export const passwordSchema = z
  .string()
  .min(LIMITS.passwordMin, `must be at least ${LIMITS.passwordMin} characters`)
  .max(LIMITS.passwordMax, `must be at most ${LIMITS.passwordMax} characters`)

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
