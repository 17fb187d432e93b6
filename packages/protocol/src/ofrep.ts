import * as z from 'zod/mini'
import { flagValueSchema } from './full-flag.js'

/**
 * The OpenFeature Remote Evaluation Protocol (OFREP) on the wire: what
 * `/ofrep/v1/…` accepts and answers (the `open-feature/protocol` OpenAPI
 * contract, with the refresh connections of its ADR 0008).
 */

/** An evaluation context: `targetingKey` (a string when present) and any other attributes. */
export const ofrepContextSchema = z.looseObject({ targetingKey: z.optional(z.string()) })
/** The context of an OFREP request (see {@link ofrepContextSchema}). */
export type OfrepContext = z.infer<typeof ofrepContextSchema>

/** The body of both evaluation routes. */
export const ofrepEvaluationRequestSchema = z.object({ context: z.optional(z.unknown()) })

/** OpenFeature reasons an OFREP server answers (`DEFAULT` when a context-dependent flag fell through to its default). */
export const OFREP_REASONS = ['STATIC', 'TARGETING_MATCH', 'SPLIT', 'DISABLED', 'DEFAULT', 'UNKNOWN'] as const
export type OfrepReason = (typeof OFREP_REASONS)[number]

/** Error codes of a failed evaluation (FLAG_NOT_FOUND is answered with 404). */
export const OFREP_ERROR_CODES = [
  'PARSE_ERROR',
  'TARGETING_KEY_MISSING',
  'INVALID_CONTEXT',
  'GENERAL',
  'FLAG_NOT_FOUND',
] as const
export type OfrepErrorCode = (typeof OFREP_ERROR_CODES)[number]

/** Flat metadata: booleans, strings and numbers only. */
export const ofrepMetadataSchema = z.record(z.string(), z.union([z.boolean(), z.string(), z.number()]))
export type OfrepMetadata = z.infer<typeof ofrepMetadataSchema>

/**
 * One flag evaluated. `value` is absent when the flag serves no value for
 * this outcome (the contract's code default: the caller's default applies).
 */
export const ofrepEvaluationSuccessSchema = z.object({
  key: z.string(),
  value: z.optional(flagValueSchema),
  reason: z.enum(OFREP_REASONS),
  variant: z.optional(z.string()),
  metadata: z.optional(ofrepMetadataSchema),
})
export type OfrepEvaluationSuccess = z.infer<typeof ofrepEvaluationSuccessSchema>

/** One flag that could not be evaluated, alone (400/404) or in a bulk answer. */
export const ofrepEvaluationFailureSchema = z.object({
  key: z.string(),
  errorCode: z.enum(OFREP_ERROR_CODES),
  errorDetails: z.optional(z.string()),
  metadata: z.optional(ofrepMetadataSchema),
})
export type OfrepEvaluationFailure = z.infer<typeof ofrepEvaluationFailureSchema>

/** A whole request refused (400 on the bulk route, or any 4xx): the flag service's `{error, code}` rides along. */
export const ofrepRequestFailureSchema = z.looseObject({
  errorCode: z.string(),
  errorDetails: z.optional(z.string()),
})
export type OfrepRequestFailure = z.infer<typeof ofrepRequestFailureSchema>

/** A refresh connection: an SSE URL that says when to re-fetch the bulk evaluation. */
export const ofrepEventStreamSchema = z.object({
  type: z.string(),
  url: z.string(),
  inactivityDelaySec: z.optional(z.number()),
})
export type OfrepEventStream = z.infer<typeof ofrepEventStreamSchema>

/**
 * The bulk answer. The refresh connections travel under both names: ADR
 * 0008's `refreshConnections` and `eventStreams`, the contract's field that
 * the shipped web provider reads.
 */
export const ofrepBulkResponseSchema = z.object({
  flags: z.array(z.union([ofrepEvaluationSuccessSchema, ofrepEvaluationFailureSchema])),
  metadata: z.optional(ofrepMetadataSchema),
  eventStreams: z.optional(z.array(ofrepEventStreamSchema)),
  refreshConnections: z.optional(z.array(ofrepEventStreamSchema)),
})
export type OfrepBulkResponse = z.infer<typeof ofrepBulkResponseSchema>

/** The data of the refresh stream's `message` event: re-fetch, passing `etag` and `lastModified` back. */
export const ofrepRefetchEventSchema = z.object({
  type: z.literal('refetchEvaluation'),
  etag: z.string(),
  lastModified: z.number(),
})
export type OfrepRefetchEvent = z.infer<typeof ofrepRefetchEventSchema>

/** GET /ofrep/v1/configuration. */
export const ofrepConfigurationSchema = z.object({
  name: z.string(),
  capabilities: z.object({
    cacheInvalidation: z.object({
      polling: z.object({ enabled: z.boolean(), minPollingIntervalMs: z.number() }),
    }),
    flagEvaluation: z.object({ supportedTypes: z.array(z.string()) }),
    caching: z.object({ enabled: z.boolean(), ttl: z.number() }),
  }),
})
export type OfrepConfiguration = z.infer<typeof ofrepConfigurationSchema>
