import { z } from 'zod'
import { nameSchema, refused } from '../schemas.js'

export const projectNameSchema = z.strictObject({
  name: nameSchema,
  slug: refused('is derived from the name and cannot be set'),
})
