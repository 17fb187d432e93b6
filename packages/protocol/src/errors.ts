import { z } from 'zod'

/** Every error a flagsync server answers with has one of these codes. */
export const ERROR_CODES = [
  'bad_request',
  'unauthorized',
  'forbidden',
  'not_found',
  'method_not_allowed',
  'conflict',
  'payload_too_large',
  'unsupported_media_type',
  'validation_failed',
  'rate_limited',
  'unavailable',
  'internal',
] as const
export type ErrorCode = (typeof ERROR_CODES)[number]

export const issueSchema = z.object({ path: z.string(), message: z.string() })
export type Issue = z.infer<typeof issueSchema>

/** The JSON body of every error response: `error` is for people, `code` for programs. */
export const errorBodySchema = z
  .object({
    error: z.string(),
    code: z.enum(ERROR_CODES).optional(),
    issues: z.array(issueSchema).optional(),
    operationIndex: z.number().int().optional(),
  })
  .loose()
export type ErrorBody = z.infer<typeof errorBodySchema>
