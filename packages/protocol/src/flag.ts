import * as z from 'zod/mini'
import { revisionSchema } from './audit.js'

/**
 * Keys appear in URL paths and SSE payloads, so they are restricted to a safe
 * alphabet (the flag service's rule, applied to the flat variant as well).
 */
export const flagKeySchema = z
  .string()
  .check(
    z.minLength(1, 'must not be empty'),
    z.maxLength(100, 'must be at most 100 characters'),
    z.regex(/^[A-Za-z0-9_-]+$/, 'may contain only letters, digits, underscores and hyphens'),
  )

/** The five string operators of the flat API. */
export const flatOperatorSchema = z.enum(['equals', 'not_equals', 'contains', 'starts_with', 'ends_with'])
/** One of the flat API's five string operators. */
export type FlatOperator = z.infer<typeof flatOperatorSchema>

/** The flag service's nine operators: the flat five plus four numeric comparisons. */
export const operatorSchema = z.enum([
  ...flatOperatorSchema.options,
  'greater_than',
  'greater_than_or_equal',
  'less_than',
  'less_than_or_equal',
])
/** One of the flag service's nine operators. */
export type Operator = z.infer<typeof operatorSchema>

/** Size limits every server enforces on a flag (and the clients may check early). */
export const LIMITS = {
  /** Characters of a flag's `description`. */
  descriptionLength: 10_000,
  /** Targeting rules per flag. */
  rules: 200,
  /** Values of one rule (at least one). */
  ruleValues: 1_000,
  /** Characters of one rule value. */
  ruleValueLength: 1_024,
  /** Characters of a rule's `attribute` (at least one). */
  attributeLength: 256,
} as const

const ruleValuesSchema = z
  .array(z.string().check(z.maxLength(LIMITS.ruleValueLength)))
  .check(z.minLength(1, 'needs at least one value'), z.maxLength(LIMITS.ruleValues))
const attributeSchema = z.string().check(z.minLength(1), z.maxLength(LIMITS.attributeLength))

/** A rule of the flat API: the attribute's value compared with one of `values` by `operator`. */
export const targetingRuleSchema = z.strictObject({
  attribute: attributeSchema,
  operator: flatOperatorSchema,
  values: ruleValuesSchema,
})
/** A targeting rule of the flat API (see {@link targetingRuleSchema}). */
export type TargetingRule = z.infer<typeof targetingRuleSchema>

const rolloutSchema = z.nullable(z.number().check(z.int(), z.gte(0), z.lte(100)))
const descriptionSchema = z.nullable(z.string().check(z.maxLength(LIMITS.descriptionLength)))
const rulesSchema = z.array(targetingRuleSchema).check(z.maxLength(LIMITS.rules))

/**
 * The flat API's flag (the flat-path variant). Unknown fields are rejected
 * so that a typo such as `is_enable` never passes silently. `revision`, which
 * every flag the servers return carries (read-only), is accepted and dropped,
 * so a GET → edit → POST round trip works.
 */
export const flagSchema = z.pipe(
  z.strictObject({
    key: flagKeySchema,
    is_enabled: z.boolean(),
    rollout_percentage: z._default(rolloutSchema, null),
    description: z._default(descriptionSchema, null),
    rules: z._default(rulesSchema, []),
    revision: z.optional(revisionSchema),
  }),
  z.transform(({ revision: _readOnly, ...flag }) => flag),
)
/** A stored flag: every default filled in. */
export type Flag = z.output<typeof flagSchema>
/** What a caller may send: optional fields may be omitted. */
export type FlagInput = z.input<typeof flagSchema>

/**
 * A JSON merge patch (RFC 7396) on top-level fields. `key` may be repeated
 * only with its current value (checked by the server); null clears a nullable
 * field and is rejected for a required one.
 */
export const flagPatchSchema = z.pipe(
  z.strictObject({
    key: z.optional(flagKeySchema),
    is_enabled: z.optional(z.boolean()),
    rollout_percentage: z.optional(rolloutSchema),
    description: z.optional(descriptionSchema),
    rules: z.optional(rulesSchema),
    // Read-only: accepted (a patch may be a whole flag as GET returned it) and dropped.
    revision: z.optional(revisionSchema),
  }),
  z.transform(({ revision: _readOnly, ...patch }) => patch),
)
/** A validated merge patch (see {@link flagPatchSchema}). */
export type FlagPatch = z.infer<typeof flagPatchSchema>
