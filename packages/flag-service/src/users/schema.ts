import { z } from 'zod'
import { LIMITS, nameSchema, roleSchema } from '../schemas.js'

export const createUserSchema = z.strictObject({
  name: nameSchema,
  email: z.email('must be an email address').max(LIMITS.emailLength),
  role: roleSchema,
  password: z
    .string()
    .min(LIMITS.passwordMin, `must be at least ${LIMITS.passwordMin} characters`)
    .max(LIMITS.passwordMax, `must be at most ${LIMITS.passwordMax} characters`),
})
