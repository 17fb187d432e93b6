import { z } from 'zod'
import { isPlainText, LIMITS, PLAIN_TEXT_MESSAGE } from '../schemas.js'

export const loginSchema = z.strictObject({
  // Checked although no stored email can match: the lockout's advisory lock hashes it in SQL.
  email: z.string().max(LIMITS.emailLength).refine(isPlainText, PLAIN_TEXT_MESSAGE),
  password: z.string().max(LIMITS.passwordMax),
})
