import * as z from 'zod/mini'

/** Every error a flagsync server answers with has one of these codes. */
export const ERROR_CODES = [
  'bad_request',
  'unauthorized',
  'forbidden',
  'not_found',
  'method_not_allowed',
  'conflict',
  'precondition_failed',
  'payload_too_large',
  'unsupported_media_type',
  'range_not_satisfiable',
  'validation_failed',
  'rate_limited',
  'unavailable',
  'internal',
] as const
/** One of {@link ERROR_CODES}: what a program branches on in an error body. */
export type ErrorCode = (typeof ERROR_CODES)[number]

/** One failing field of a validation error: `{path: 'rules[0].operator', message}`. */
export const issueSchema = z.object({ path: z.string(), message: z.string() })
/** One failing field of a validation error (see {@link issueSchema}). */
export type Issue = z.infer<typeof issueSchema>

/** The JSON body of every error response: `error` is for people, `code` for programs. */
export const errorBodySchema = z.looseObject({
  error: z.string(),
  code: z.optional(z.enum(ERROR_CODES)),
  issues: z.optional(z.array(issueSchema)),
  operationIndex: z.optional(z.number().check(z.int())),
})
/** The JSON body of every error response (see {@link errorBodySchema}). */
export type ErrorBody = z.infer<typeof errorBodySchema>
