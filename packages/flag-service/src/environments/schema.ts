import { z } from 'zod'
import { LIMITS, nameSchema, refused } from '../schemas.js'
import { ENVIRONMENT_SLUG_PATTERN } from '../slug.js'

export const DEFAULT_ENVIRONMENT_COLOR = '#6366f1'

const color = z
  .string()
  .regex(/^#(?:[0-9a-fA-F]{3}|[0-9a-fA-F]{6})$/, 'must be a hex color #rgb or #rrggbb')
  .transform((c) => c.toLowerCase())

export const createEnvironmentSchema = z.strictObject({
  name: nameSchema,
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
    name: nameSchema.optional(),
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
