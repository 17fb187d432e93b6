import { z } from 'zod'

/**
 * Keys appear in URL paths and SSE payloads, so they are restricted to a safe
 * alphabet (document 1's rule, applied to the flat variant as well).
 */
export const flagKeySchema = z
  .string()
  .min(1, 'must not be empty')
  .max(100, 'must be at most 100 characters')
  .regex(/^[A-Za-z0-9_-]+$/, 'may contain only letters, digits, underscores and hyphens')

/** The five string operators of document 2. */
export const flatOperatorSchema = z.enum(['equals', 'not_equals', 'contains', 'starts_with', 'ends_with'])
export type FlatOperator = z.infer<typeof flatOperatorSchema>

/** Document 1's nine operators: the flat five plus four numeric comparisons. */
export const operatorSchema = z.enum([
  ...flatOperatorSchema.options,
  'greater_than',
  'greater_than_or_equal',
  'less_than',
  'less_than_or_equal',
])
export type Operator = z.infer<typeof operatorSchema>

export const LIMITS = {
  descriptionLength: 10_000,
  rules: 200,
  ruleValues: 1_000,
  ruleValueLength: 1_024,
  attributeLength: 256,
} as const

const ruleValuesSchema = z
  .array(z.string().max(LIMITS.ruleValueLength))
  .min(1, 'needs at least one value')
  .max(LIMITS.ruleValues)
const attributeSchema = z.string().min(1).max(LIMITS.attributeLength)

export const targetingRuleSchema = z.strictObject({
  attribute: attributeSchema,
  operator: flatOperatorSchema,
  values: ruleValuesSchema,
})
export type TargetingRule = z.infer<typeof targetingRuleSchema>

const rolloutSchema = z.number().int().min(0).max(100).nullable()
const descriptionSchema = z.string().max(LIMITS.descriptionLength).nullable()

/**
 * The flag of document 2 (the flat-path variant). Unknown fields are rejected
 * so that a typo such as `is_enable` never passes silently.
 */
export const flagSchema = z.strictObject({
  key: flagKeySchema,
  is_enabled: z.boolean(),
  rollout_percentage: rolloutSchema.default(null),
  description: descriptionSchema.default(null),
  rules: z.array(targetingRuleSchema).max(LIMITS.rules).default([]),
})
/** A stored flag: every default filled in. */
export type Flag = z.output<typeof flagSchema>
/** What a caller may send: optional fields may be omitted. */
export type FlagInput = z.input<typeof flagSchema>

/**
 * A JSON merge patch (RFC 7396) on top-level fields. `key` may be repeated
 * only with its current value (checked by the server); null clears a nullable
 * field and is rejected for a required one.
 */
export const flagPatchSchema = z.strictObject({
  key: flagKeySchema.optional(),
  is_enabled: z.boolean().optional(),
  rollout_percentage: rolloutSchema.optional(),
  description: descriptionSchema.optional(),
  rules: z.array(targetingRuleSchema).max(LIMITS.rules).optional(),
})
export type FlagPatch = z.infer<typeof flagPatchSchema>
