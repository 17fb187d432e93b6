import { z } from 'zod'
import { roleSchema } from '../schemas.js'

export const addMemberSchema = z.strictObject({
  user_id: z.number().int().positive().max(2_147_483_647),
  role: roleSchema,
})

export const updateMemberSchema = z.strictObject({ role: roleSchema })
