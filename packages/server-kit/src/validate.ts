import { enableEnglishMessages, toIssues } from '@flagsync/protocol'
import { type $ZodType, type output, safeParse } from 'zod/v4/core'
import { HttpError } from './http-error.js'

// The protocol's schemas are built with zod/mini, which carries no locale: without
// this a 422 would say `Invalid input` where it names the expected type today.
enableEnglishMessages()

/**
 * Parses with a schema (a protocol schema built with `zod/mini` or any classic
 * `zod` schema) or throws a 422 that names every failing field.
 */
export function parseOr422<S extends $ZodType>(schema: S, value: unknown, what: string): output<S> {
  const result = safeParse(schema, value)
  if (result.success) return result.data
  const issues = toIssues(result.error)
  const first = issues[0]
  const summary = first ? `${first.path}: ${first.message}` : 'invalid'
  return raise(new HttpError('validation_failed', `invalid ${what}: ${summary}`, { issues }))
}

function raise(error: HttpError): never {
  throw error
}
