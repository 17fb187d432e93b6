import * as z from 'zod/mini'
import { flagKeySchema, LIMITS, operatorSchema } from './flag.js'
import { isJsonValue, type JsonValue } from './json-value.js'

/**
 * The flag service's full flag model. The flat API's flag is its boolean subset, so
 * every flat flag is also a valid full flag; evaluation works on this shape.
 */
export const flagTypeSchema = z.enum(['boolean', 'string', 'integer', 'json'])
/** The type of a flag's values: `boolean`, `string`, `integer` or `json`. */
export type FlagType = z.infer<typeof flagTypeSchema>

/**
 * Any JSON value: what a flag's default, disabled and variant values may be. Checked in place and passed through
 * as it is, not rebuilt (as `z.json()` does): rebuilding an object assigns each key, and assigning `__proto__` sets
 * the prototype, so a value with a `"__proto__"` key lost it without an error.
 */
export const flagValueSchema = z.custom<JsonValue>((value) => isJsonValue(value), {
  error: 'must be a JSON value (null, a boolean, a finite number, a string, or an array or object of them)',
})
/** A JSON value served by a flag. */
export type FlagValue = z.infer<typeof flagValueSchema>

/** A rule of the flag service: an attribute condition or a segment reference, optionally serving a variant. */
export const fullTargetingRuleSchema = z.strictObject({
  attribute: z.optional(z.string().check(z.minLength(1), z.maxLength(LIMITS.attributeLength))),
  operator: z.optional(operatorSchema),
  values: z.optional(
    z.array(z.string().check(z.maxLength(LIMITS.ruleValueLength))).check(z.maxLength(LIMITS.ruleValues)),
  ),
  segment_key: z.optional(z.nullable(z.string().check(z.minLength(1), z.maxLength(100)))),
  variant: z.optional(flagValueSchema),
})
/** A targeting rule of the flag service (see {@link fullTargetingRuleSchema}). */
export type FullTargetingRule = z.infer<typeof fullTargetingRuleSchema>

/** A value served to a share of the rollout, in proportion to its `weight`. */
export const weightedVariantSchema = z.strictObject({
  weight: z.number().check(z.int(), z.gte(0)),
  value: flagValueSchema,
})
/** A weighted variant (see {@link weightedVariantSchema}). */
export type WeightedVariant = z.infer<typeof weightedVariantSchema>

/** Another flag that must serve `required_value` (or be on, when absent) before this one is evaluated. */
export const prerequisiteSchema = z.strictObject({
  flag_key: flagKeySchema,
  required_value: z.optional(flagValueSchema),
})
/** A prerequisite (see {@link prerequisiteSchema}). */
export type Prerequisite = z.infer<typeof prerequisiteSchema>

/** The flag service's flag with every field typed; defaults filled on parse. */
export const fullFlagSchema = z.strictObject({
  key: flagKeySchema,
  is_enabled: z.boolean(),
  rollout_percentage: z._default(z.nullable(z.number().check(z.int(), z.gte(0), z.lte(100))), null),
  description: z._default(z.nullable(z.string().check(z.maxLength(LIMITS.descriptionLength))), null),
  rules: z._default(z.array(fullTargetingRuleSchema).check(z.maxLength(LIMITS.rules)), []),
  flag_type: z._default(flagTypeSchema, 'boolean'),
  default_value: z.optional(flagValueSchema),
  disabled_value: z.optional(flagValueSchema),
  variants: z._default(z.array(weightedVariantSchema).check(z.maxLength(100)), []),
  prerequisites: z._default(z.array(prerequisiteSchema).check(z.maxLength(100)), []),
})
/** A full flag as stored: every default filled in. */
export type FullFlag = z.output<typeof fullFlagSchema>

/**
 * What the evaluator accepts: a full flag whose optional parts may be absent,
 * so a flat flag, a full flag and a flag straight off the stream all fit.
 */
export type EvaluableFlag = z.input<typeof fullFlagSchema>
