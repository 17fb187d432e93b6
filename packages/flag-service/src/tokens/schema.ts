import { z } from 'zod'
import { TOKEN_SCOPES } from '../auth/context.js'
import { LIMITS, nameSchema } from '../schemas.js'

export const createTokenSchema = z.strictObject({
  name: nameSchema,
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
