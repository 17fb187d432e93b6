import { jsonDepthExceeds } from '@flagsync/server-kit'
import { z } from 'zod'
import { definitionOf } from '../flags/meta.js'
import { flagBodySchema } from '../flags/model.js'

/** Contexts are flat attributes; a few levels leave room for list values, and no more is ever read. */
const CONTEXT_MAX_DEPTH = 4
/** The context's JSON text, at most (an impression keeps 4 096 characters; a test case may carry more). */
const CONTEXT_MAX_LENGTH = 16_384
/** Keys one call may ask for. */
const EVALUATE_MAX_KEYS = 1_000
/** Unsaved flags one call may evaluate in place of the saved ones (an editor's draft, a few at most). */
const EVALUATE_MAX_DRAFTS = 20

const contextSchema = z
  .record(z.string(), z.unknown())
  .refine((c) => !jsonDepthExceeds(c, CONTEXT_MAX_DEPTH), `nested deeper than ${CONTEXT_MAX_DEPTH} levels`)
  .refine((c) => JSON.stringify(c).length <= CONTEXT_MAX_LENGTH, `longer than ${CONTEXT_MAX_LENGTH} characters of JSON`)

/**
 * The body of `POST /api/environments/:env_id/evaluate`: the context to test,
 * optionally the flags to evaluate (every flag of the environment when absent),
 * and optionally unsaved flags (`flags`, whole flags as `POST …/flags` takes
 * them) evaluated in place of the saved flag of the same key, for "what would
 * this user get with my edit". Nothing is saved.
 * @example { "context": { "user_id": "u-42", "country": "NL" }, "keys": ["theme"] }
 */
export const evaluateRequestSchema = z.strictObject({
  context: contextSchema,
  // Any string: a key that cannot exist is answered FLAG_NOT_FOUND like one that does not.
  keys: z.optional(z.array(z.string().max(200)).max(EVALUATE_MAX_KEYS)),
  // A flag read is taken as is, as a save takes it: its revision, tags, owner and lifecycle fields are left aside.
  flags: z.optional(z.array(z.preprocess(definitionOf, flagBodySchema)).max(EVALUATE_MAX_DRAFTS)),
})

/** The condition that decided a `TARGETING_MATCH`, as SDKs receive the flag (a segment's rule is one per condition). */
export interface DecidingRule {
  attribute: string
  operator: string
  values: string[]
  /** The rule's index in the flag as saved, where a segment's rule is one rule (as the editor numbers them). */
  index?: number
  /** The segment the condition is from, when the rule is a segment's. */
  segment_key?: string
}

/** One flag's answer: what it serves this context and what decided it. */
export interface EvaluatedFlag {
  key: string
  value: unknown
  variant: string | null
  reason: string
  /** The index of the matching rule, in the rules as SDKs receive them (segments expanded). */
  rule_index?: number
  /** That rule's condition, to say in words why the context matched. */
  rule?: DecidingRule
  /** The context's rollout bucket (0–99) for a split. */
  bucket?: number
  error?: string
}
