import { z } from 'zod'
import { isPlainText, LIMITS, PLAIN_TEXT_MESSAGE } from '../schemas.js'
import { passwordInputSchema, passwordSchema } from '../users/schema.js'

export const loginSchema = z.strictObject({
  // Checked although no stored email can match: the lockout's advisory lock hashes it in SQL.
  email: z.string().max(LIMITS.emailLength).refine(isPlainText, PLAIN_TEXT_MESSAGE),
  password: passwordInputSchema,
})

/** POST /api/auth/password: the signed-in user's own change; the new password follows the one password rule. */
export const changePasswordSchema = z.strictObject({
  current_password: passwordInputSchema,
  new_password: passwordSchema,
})
