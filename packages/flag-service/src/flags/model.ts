import { fitsType } from '@flagsync/evaluation'
import {
  type FlagType,
  type FullFlag,
  type FullTargetingRule,
  flagKeySchema,
  flagTypeSchema,
  flagValueSchema,
  fullFlagSchema,
  fullTargetingRuleSchema,
  type Issue,
  LIMITS,
  operatorSchema,
  prerequisiteSchema,
  weightedVariantSchema,
} from '@flagsync/protocol'
import { HttpError, parseOr422 } from '@flagsync/server-kit'
import { z } from 'zod'
import { nameSchema } from '../schemas.js'

/** A flag as stored and answered by the dashboard routes: the flag service's Flag, every default filled in. */
export type ServiceFlag = FullFlag

/** The largest weight of one variant: 100 variants of it stay below 2^32, the range of the bucketing hash. */
const MAX_VARIANT_WEIGHT = 1_000_000

// One definition of "a value of this flag_type" for saving and for evaluating.
export { fitsType } from '@flagsync/evaluation'

const article = (type: FlagType) => (type === 'integer' ? 'an integer' : type === 'json' ? 'JSON' : `a ${type}`)
export const typeMessage = (type: FlagType) => `must be ${article(type)} (flag_type is ${type})`

type Ctx = z.RefinementCtx

/** The checks that span fields: rule shapes, typed values, weights, prerequisite keys. */
function refineFlag(flag: FullFlag, ctx: Ctx): void {
  const type = flag.flag_type
  const typed = (value: unknown, path: PropertyKey[]) => {
    if (value !== undefined && !fitsType(type, value))
      ctx.addIssue({ code: 'custom', path, message: typeMessage(type) })
  }
  typed(flag.default_value, ['default_value'])
  typed(flag.disabled_value, ['disabled_value'])
  flag.rules.forEach((rule, i) => {
    refineRule(rule, ['rules', i], ctx)
    typed(rule.variant, ['rules', i, 'variant'])
  })
  flag.variants.forEach((variant, i) => {
    typed(variant.value, ['variants', i, 'value'])
    if (variant.weight > MAX_VARIANT_WEIGHT) {
      ctx.addIssue({
        code: 'custom',
        path: ['variants', i, 'weight'],
        message: `must be at most ${MAX_VARIANT_WEIGHT}`,
      })
    }
  })
  const seen = new Set<string>()
  flag.prerequisites.forEach((p, i) => {
    if (seen.has(p.flag_key)) {
      ctx.addIssue({ code: 'custom', path: ['prerequisites', i, 'flag_key'], message: 'is listed twice' })
    }
    seen.add(p.flag_key)
    if (p.flag_key === flag.key) {
      ctx.addIssue({
        code: 'custom',
        path: ['prerequisites', i, 'flag_key'],
        message: `prerequisite cycle: ${flag.key} -> ${flag.key}`,
      })
    }
  })
}

/** A rule references either a segment or an attribute, never both; an attribute rule needs all three fields. */
function refineRule(rule: FullTargetingRule, path: PropertyKey[], ctx: Ctx): void {
  if (rule.segment_key != null) {
    if (!flagKeySchema.safeParse(rule.segment_key).success) {
      ctx.addIssue({
        code: 'custom',
        path: [...path, 'segment_key'],
        message: 'may contain only letters, digits, underscores and hyphens',
      })
    }
    for (const field of ['attribute', 'operator', 'values'] as const) {
      if (rule[field] !== undefined) {
        ctx.addIssue({
          code: 'custom',
          path: [...path, field],
          message: 'a rule with segment_key takes its conditions from the segment: omit attribute, operator and values',
        })
      }
    }
    return
  }
  for (const field of ['attribute', 'operator', 'values'] as const) {
    if (rule[field] === undefined) {
      ctx.addIssue({ code: 'custom', path: [...path, field], message: 'is required unless segment_key is set' })
    }
  }
  if (rule.values !== undefined && rule.values.length === 0) {
    ctx.addIssue({ code: 'custom', path: [...path, 'values'], message: 'needs at least one value' })
  }
}

/** Drops `segment_key: null` from attribute rules, so stored rules have one shape per kind. */
function normalizeRules(flag: FullFlag): FullFlag {
  return {
    ...flag,
    rules: flag.rules.map((rule) => {
      if (rule.segment_key !== null) return rule
      const { segment_key: _none, ...rest } = rule
      return rest
    }),
  }
}

/** The body of `POST …/flags` (create or replace): the flag service's Flag with every field typed. */
// The protocol's schemas are zod/mini: wrapping the shape in a classic object gives the same parse
// (both are zod/v4/core schemas) plus the chained methods used here.
export const flagBodySchema = z.strictObject(fullFlagSchema.shape).superRefine(refineFlag).transform(normalizeRules)

/**
 * A JSON merge patch (RFC 7396) of a flag's top-level fields. Lists replace
 * whole. `null` clears `rollout_percentage` and `description`, and removes
 * `default_value` / `disabled_value` (so a json flag's `null` value can only be
 * set with POST). The key may be repeated only with its current value.
 */
export const flagPatchSchema = z
  .strictObject({
    key: z.optional(flagKeySchema),
    is_enabled: z.boolean().optional(),
    rollout_percentage: z.number().int().min(0).max(100).nullable().optional(),
    description: z.string().max(LIMITS.descriptionLength).nullable().optional(),
    rules: z.array(fullTargetingRuleSchema).max(LIMITS.rules).optional(),
    flag_type: z.optional(flagTypeSchema),
    default_value: z.optional(flagValueSchema),
    disabled_value: z.optional(flagValueSchema),
    variants: z.array(weightedVariantSchema).max(100).optional(),
    prerequisites: z.array(prerequisiteSchema).max(100).optional(),
  })
  .refine((patch) => Object.keys(patch).length > 0, {
    error: 'send at least one field to change',
    when: (payload) => payload.issues.length === 0, // an unknown field is the problem to report, not emptiness
  })
export type FlagPatch = z.output<typeof flagPatchSchema>

/** Raises a 422 naming each issue (`invalid <what>: <first>`), like `parseOr422`. */
export function unprocessable(what: string, issues: Issue[]): HttpError {
  const first = issues[0]
  return new HttpError(
    'validation_failed',
    `invalid ${what}: ${first ? `${first.path}: ${first.message}` : 'invalid'}`,
    {
      issues,
    },
  )
}

/** Applies a validated merge patch to a stored flag and validates the result as a whole flag. */
export function mergeFlag(current: ServiceFlag, patch: FlagPatch): ServiceFlag {
  if (patch.key !== undefined && patch.key !== current.key) {
    throw unprocessable('patch', [
      { path: 'key', message: `the key cannot change (is ${JSON.stringify(current.key)})` },
    ])
  }
  const merged: Record<string, unknown> = { ...current }
  for (const [field, value] of Object.entries(patch)) {
    if (value === undefined) continue
    if (value === null && (field === 'default_value' || field === 'disabled_value')) delete merged[field]
    else merged[field] = value
  }
  return parseOr422(flagBodySchema, merged, 'flag after the patch')
}

// ---------------------------------------------------------------------------------------------------------------
// Segments (not in the spec): a named, reusable list of attribute conditions, owned by a project.

/** The largest number of conditions in one segment (the same cap as a flag's rules). */
const MAX_SEGMENT_RULES = LIMITS.rules

const segmentRuleSchema = z.strictObject({
  attribute: z.string().min(1).max(LIMITS.attributeLength),
  operator: operatorSchema,
  values: z.array(z.string().max(LIMITS.ruleValueLength)).min(1, 'needs at least one value').max(LIMITS.ruleValues),
})
export type SegmentRule = z.infer<typeof segmentRuleSchema>

/** A segment's name follows the service's one rule for names (plain text, no bidirectional controls). */
const segmentName = nameSchema
const segmentDescription = z.string().max(LIMITS.descriptionLength).nullable()
const segmentRules = z.array(segmentRuleSchema).max(MAX_SEGMENT_RULES)

export const createSegmentSchema = z.strictObject({
  key: flagKeySchema,
  name: segmentName,
  description: segmentDescription.default(null),
  rules: segmentRules.default([]),
})

export const updateSegmentSchema = z
  .strictObject({
    key: z.optional(flagKeySchema),
    name: segmentName.optional(),
    description: segmentDescription.optional(),
    rules: segmentRules.optional(),
  })
  .refine((v) => v.name !== undefined || v.description !== undefined || v.rules !== undefined, {
    error: 'send name, description or rules',
    when: (payload) => payload.issues.length === 0,
  })

/** A segment as stored (in the flag store, scope `seg:<project id>`) and answered. */
export interface Segment {
  key: string
  name: string
  description: string | null
  rules: SegmentRule[]
  created_at: string
  updated_at: string
}

// ---------------------------------------------------------------------------------------------------------------
// Other bodies.

export const promoteSchema = z.strictObject({ target_env_id: z.string().max(64) })

/** One flag of `POST /api/projects/:id/promote`: `base_revision` is its revision in the target, null where absent. */
/**
 * `GET /api/projects/:id/compare`'s query: only `from` and `to` (the route checks each is an environment of the
 * project); another parameter (`?form=`, `?differences_only=`) is a 422 naming it, as on the change routes.
 */
export const compareQuerySchema = z.strictObject({ from: z.unknown().optional(), to: z.unknown().optional() })

const promotedFlagSchema = z.strictObject({
  key: flagKeySchema,
  base_revision: z.number().int().min(0).nullable(),
})

/** `POST /api/projects/:id/promote`: 1–100 flags of one environment into another, each key once. */
export const promoteFlagsSchema = z
  .strictObject({
    from_env_id: z.string().max(64),
    to_env_id: z.string().max(64),
    flags: z.array(promotedFlagSchema).min(1).max(100),
  })
  .superRefine((body, ctx) => {
    const seen = new Set<string>()
    body.flags.forEach((flag, i) => {
      if (seen.has(flag.key)) ctx.addIssue({ code: 'custom', path: ['flags', i, 'key'], message: 'is listed twice' })
      seen.add(flag.key)
    })
  })

/** `POST /api/projects/:id/flags`: one new flag (checked as a flag body) for several environments of the project. */
export const createInEnvironmentsSchema = z.strictObject({
  flag: z.unknown(),
  environment_ids: z.array(z.string().max(64)).min(1).max(100),
})

export const rejectSchema = z
  .strictObject({ reason: z.string().max(LIMITS.descriptionLength).nullable().optional() })
  .default({})

/** The optional body of an approval: `{force: true}` approves a stale request (see also `?force=true`). */
export const approveSchema = z
  .strictObject({ force: z.boolean().optional() })
  .optional()
  .transform((v) => v ?? {})

const CHANGE_REQUEST_STATUSES = ['pending', 'approved', 'rejected', 'cancelled'] as const
export type ChangeRequestStatus = (typeof CHANGE_REQUEST_STATUSES)[number]
export const changeRequestQuerySchema = z.object({ status: z.enum(CHANGE_REQUEST_STATUSES).optional() })
