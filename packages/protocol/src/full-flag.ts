import { z } from 'zod'
import { flagKeySchema, LIMITS, operatorSchema } from './flag.js'

/**
 * Document 1's full flag model. Document 2's flag is its boolean subset, so
 * every flat flag is also a valid full flag; evaluation works on this shape.
 */
export const flagTypeSchema = z.enum(['boolean', 'string', 'integer', 'json'])
export type FlagType = z.infer<typeof flagTypeSchema>

export const flagValueSchema = z.json()
export type FlagValue = z.infer<typeof flagValueSchema>

export const fullTargetingRuleSchema = z.strictObject({
  attribute: z.string().min(1).max(LIMITS.attributeLength).optional(),
  operator: operatorSchema.optional(),
  values: z.array(z.string().max(LIMITS.ruleValueLength)).max(LIMITS.ruleValues).optional(),
  segment_key: z.string().min(1).max(100).nullable().optional(),
  variant: flagValueSchema.optional(),
})
export type FullTargetingRule = z.infer<typeof fullTargetingRuleSchema>

export const weightedVariantSchema = z.strictObject({
  weight: z.number().int().min(0),
  value: flagValueSchema,
})
export type WeightedVariant = z.infer<typeof weightedVariantSchema>

export const prerequisiteSchema = z.strictObject({
  flag_key: flagKeySchema,
  required_value: flagValueSchema.optional(),
})
export type Prerequisite = z.infer<typeof prerequisiteSchema>

export const fullFlagSchema = z.strictObject({
  key: flagKeySchema,
  is_enabled: z.boolean(),
  rollout_percentage: z.number().int().min(0).max(100).nullable().default(null),
  description: z.string().max(LIMITS.descriptionLength).nullable().default(null),
  rules: z.array(fullTargetingRuleSchema).max(LIMITS.rules).default([]),
  flag_type: flagTypeSchema.default('boolean'),
  default_value: flagValueSchema.optional(),
  disabled_value: flagValueSchema.optional(),
  variants: z.array(weightedVariantSchema).max(100).default([]),
  prerequisites: z.array(prerequisiteSchema).max(100).default([]),
})
export type FullFlag = z.output<typeof fullFlagSchema>

/**
 * What the evaluator accepts: a full flag whose optional parts may be absent,
 * so a flat flag, a full flag and a flag straight off the stream all fit.
 */
export type EvaluableFlag = z.input<typeof fullFlagSchema>
